module github.com/rampart-go/rampart/bench

go 1.26.0

require (
	github.com/afex/hystrix-go v0.0.0-20180502004556-fa1af6a1f4f5
	github.com/eapache/go-resiliency v1.7.0
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/rampart-go/rampart v0.0.0
	github.com/sony/gobreaker/v2 v2.4.0
	golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da
)

require (
	github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/smartystreets/goconvey v1.8.1 // indirect
)

replace github.com/rampart-go/rampart => ../

tool golang.org/x/perf/cmd/benchstat
