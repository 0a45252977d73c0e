module github.com/rampart-go/rampart/ramparttoml

go 1.26.0

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/rampart-go/rampart v0.0.0
	github.com/stretchr/testify v1.12.1
	golang.org/x/time v0.16.0
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sync v0.25.0 // indirect
)

replace github.com/rampart-go/rampart => ../
