module github.com/rampart-go/rampart/bench

go 1.26.0

require (
	github.com/afex/hystrix-go v0.0.0-20180502004556-fa1af6a1f4f5
	github.com/eapache/go-resiliency v1.7.0
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/rampart-go/rampart v0.0.0
	github.com/rampart-go/rampart/rampartgrpc v0.0.0
	github.com/sony/gobreaker/v2 v2.4.0
	golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da
	golang.org/x/time v0.16.0
	google.golang.org/grpc v1.85.0
)

require (
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

require (
	github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/influxdata/tdigest v0.0.1 // indirect
	github.com/smartystreets/goconvey v1.8.1 // indirect
)

replace github.com/rampart-go/rampart => ../

replace github.com/rampart-go/rampart/rampartgrpc => ../rampartgrpc

tool golang.org/x/perf/cmd/benchstat
