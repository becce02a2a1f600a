package plane

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// namedBackend is an HTTP server on loopback that answers every request with its name.
func namedBackend(t *testing.T, name string) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, name)
	}))
	t.Cleanup(s.Close)
	return s
}

// askBalancer makes one request on a new connection through the balancer at addr and returns
// the answering backend's name.
func askBalancer(addr string) (string, error) {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + addr + "/")
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestBalancerSpreadsConnectionsAndSkipsDeadBackends(t *testing.T) {
	backends := map[string]*httptest.Server{}
	var addrs []string
	for _, name := range []string{"a", "b", "c"} {
		s := namedBackend(t, name)
		backends[name] = s
		addrs = append(addrs, strings.TrimPrefix(s.URL, "http://"))
	}
	b, err := startBalancer("127.0.0.1:0", addrs, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })

	count := func(n int) map[string]int {
		t.Helper()
		got := map[string]int{}
		for range n {
			name, err := askBalancer(b.Addr())
			if err != nil {
				t.Fatalf("request through the balancer: %v", err)
			}
			got[name]++
		}
		return got
	}
	if got := count(9); got["a"] != 3 || got["b"] != 3 || got["c"] != 3 {
		t.Fatalf("9 connections over 3 backends: %v, want 3 each", got)
	}

	// A stopped backend refuses connections: the balancer skips it, no request fails.
	backends["b"].Close()
	if got := count(8); got["b"] != 0 || got["a"]+got["c"] != 8 || got["a"] == 0 || got["c"] == 0 {
		t.Fatalf("with b stopped: %v, want all on a and c", got)
	}

	// With no backend left, the connection is closed: the request fails, the balancer lives on.
	backends["a"].Close()
	backends["c"].Close()
	if name, err := askBalancer(b.Addr()); err == nil {
		t.Fatalf("request answered by %q with every backend stopped", name)
	}

	// A backend that comes back on its address is used again.
	ln, err := net.Listen("tcp", addrs[1])
	if err != nil {
		t.Fatalf("listen on b's address again: %v", err)
	}
	again := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "b again")
	}), ReadHeaderTimeout: time.Second}}
	again.Start()
	t.Cleanup(again.Close)
	if got := count(3); got["b again"] != 3 {
		t.Fatalf("with only b back: %v", got)
	}

	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := askBalancer(b.Addr()); err == nil {
		t.Fatal("request answered after Close")
	}
}

func TestBalancerClosesConnectionsInFlight(t *testing.T) {
	// A backend that accepts and holds the connection, as a watch or a slow webhook call.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	b, err := startBalancer("127.0.0.1:0", []string{ln.Addr().String()}, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with a connection in flight")
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("client connection still open after Close")
	}
}
