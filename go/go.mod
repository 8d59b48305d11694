module example.invalid/roundtable/go

go 1.23

require github.com/goccy/go-json v0.12.0
