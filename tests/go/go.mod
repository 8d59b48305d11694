module roundtable.test/host

go 1.22
