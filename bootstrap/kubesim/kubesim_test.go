package kubesim

import (
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestStageFiles(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b.yaml", "a.yml", "kustomization.yaml", "README.md"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := StageFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "a.yml"), filepath.Join(dir, "b.yaml")}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("StageFiles = %v, want %v", got, want)
	}
	if _, err := StageFiles(t.TempDir()); err == nil {
		t.Fatal("StageFiles of an empty directory succeeded")
	}
	if _, err := StageFiles(""); err == nil {
		t.Fatal("StageFiles without a directory succeeded")
	}
}

func TestNodeName(t *testing.T) {
	if got := NodeName("management", 0); got != "management-node-0" {
		t.Fatalf("NodeName = %q, want management-node-0", got)
	}
	// The name is also the hostname label: at most 63 characters, and distinct per index.
	long := strings.Repeat("x", 80)
	a, b := NodeName(long, 1), NodeName(long, 2)
	if len(a) > 63 || len(b) > 63 || a == b {
		t.Fatalf("NodeName of a long cluster name: %q, %q", a, b)
	}
}

func TestNodeAddresses(t *testing.T) {
	n := Node("w-node-0", "", "")
	var ip, host string
	for _, a := range n.Status.Addresses {
		switch a.Type {
		case corev1.NodeInternalIP:
			ip = a.Address
		case corev1.NodeHostName:
			host = a.Address
		}
	}
	// kwok gives host-network Pods the Node's InternalIP: without one they never stay Running.
	if parsed := net.ParseIP(ip); parsed == nil || parsed.To4() == nil || !strings.HasPrefix(ip, "192.168.") || strings.HasSuffix(ip, ".0") || strings.HasSuffix(ip, ".255") {
		t.Fatalf("InternalIP = %q, want a host address in 192.168.0.0/16", ip)
	}
	if host != "w-node-0" {
		t.Fatalf("Hostname = %q, want the Node's name", host)
	}
	if NodeIP("w-node-0") != ip {
		t.Fatal("NodeIP differs from the Node's InternalIP")
	}
	if NodeIP("w-node-0") == NodeIP("w-node-1") {
		t.Fatalf("two Nodes of a cluster share %s", ip)
	}
}
