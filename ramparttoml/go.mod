module github.com/rampart-go/rampart/ramparttoml

go 1.26.0

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/rampart-go/rampart v0.0.0
	golang.org/x/time v0.16.0
)

require golang.org/x/sync v0.25.0 // indirect

replace github.com/rampart-go/rampart => ../
