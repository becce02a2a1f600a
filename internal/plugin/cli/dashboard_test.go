package cli

import (
	"net"
	"testing"
)

// TestIsLoopbackListener: the dashboard warns, and accepts any Host header, only when it
// listens beyond loopback.
func TestIsLoopbackListener(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:0": true, "[::1]:0": true, "0.0.0.0:0": false, ":0": false} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Logf("listen on %s: %v (skipped)", addr, err)
			continue
		}
		if got := isLoopbackListener(ln); got != want {
			t.Errorf("isLoopbackListener(%s) = %v, want %v", addr, got, want)
		}
		_ = ln.Close()
	}
}
