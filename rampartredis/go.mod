module github.com/rampart-go/rampart/rampartredis

go 1.26.0

require (
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/rampart-go/rampart v0.0.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/sony/gobreaker/v2 v2.4.0
	github.com/stretchr/testify v1.12.1
	golang.org/x/time v0.16.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

replace github.com/rampart-go/rampart => ../
