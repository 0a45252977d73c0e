// Package rampartgrpc adapts rampart stacks to gRPC.
package rampartgrpc
