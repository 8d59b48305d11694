module example.invalid/roundtable/go

go 1.23
