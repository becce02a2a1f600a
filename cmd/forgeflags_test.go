package main

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestForgeFlags(t *testing.T) {
	parse := func(args ...string) (*forgeFlags, error) {
		fs := flag.NewFlagSet("manager", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f := bindForgeFlags(fs)
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		err := f.validate()
		return f, err
	}
	f, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	if f.limits.APITimeout != 30*time.Second || f.limits.GitTimeout != time.Minute || f.limits.MaxBytes != 64<<20 ||
		f.hostConcurrency != 2 || f.policy.AllowLoopbackHTTP || len(f.policy.APIHosts) != 0 {
		t.Errorf("defaults: %+v", f)
	}
	f, err = parse("--forge-api-hosts= api.example.com ,gitea.example.com:8443,", "--fleet-checkout-size-limit=16Mi", "--forge-allow-loopback-http")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.policy.APIHosts, []string{"api.example.com", "gitea.example.com:8443"}) || f.limits.MaxBytes != 16<<20 || !f.policy.AllowLoopbackHTTP {
		t.Errorf("parsed: %+v", f)
	}
	for _, bad := range [][]string{
		{"--fleet-checkout-size-limit=lots"}, {"--fleet-checkout-size-limit=0"}, {"--forge-host-concurrency=0"},
		{"--forge-api-timeout=0s"}, {"--forge-api-hosts=https://api.example.com"}, {"--forge-api-hosts=user@host"},
	} {
		if _, err := parse(bad...); err == nil || !strings.Contains(err.Error(), strings.SplitN(strings.TrimPrefix(bad[0], "--"), "=", 2)[0]) {
			t.Errorf("%v: %v, want an error naming the flag", bad, err)
		}
	}
}
