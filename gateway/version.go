package gateway

// Version is the gateway's version, reported by `setats version` and the gateway-info action.
// Release builds set it with -ldflags "-X github.com/setats/setats/gateway.Version=v1.2.3".
var Version = "0.1.0-dev"
