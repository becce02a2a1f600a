package controllers

import (
	"encoding/binary"
	"encoding/hex"
	"hash/fnv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// renderMemo remembers, per ClusterAddon, what its last values render was made from and what it
// applied, so that a reconcile whose render inputs have not changed since (the same objects at
// the same resourceVersions, the same stack and release) neither renders nor hashes the values
// again when the ConfigMap in the cache is still as applied: a Cluster is reconciled several
// times on its way to Ready (each Flux object's Ready wakes it) and its values change only with
// its inputs. Rendering is a pure function of those inputs (internal/render: no clock, no
// randomness, no environment). The memo lives in memory only: a restarted process renders every
// Cluster once again, and an entry is dropped with its ClusterAddon.
type renderMemo struct {
	byAddon[renderMemoEntry]
}

// renderMemoEntry is what one ClusterAddon's last successful render was made from (inputs, a
// digest of renderInputs) and what was applied: the ConfigMap's applied hash and the digest of
// its data (configMapDataHash), both hex strings of 16 bytes, kept as the bytes (the memo holds
// an entry per Cluster: 48 bytes instead of two strings of 32 characters and their headers).
type renderMemoEntry struct {
	inputs, hash, dataHash [16]byte
}

// newRenderMemoEntry is the entry of a render made from inputs whose ConfigMap was applied with
// hash and has data of digest dataHash; false when either is not what hashOf and
// configMapDataHash make (the memo is then not used).
func newRenderMemoEntry(inputs [16]byte, hash, dataHash string) (renderMemoEntry, bool) {
	e := renderMemoEntry{inputs: inputs}
	h, err1 := hex.DecodeString(hash)
	d, err2 := hex.DecodeString(dataHash)
	if err1 != nil || err2 != nil || len(h) != len(e.hash) || len(d) != len(e.dataHash) {
		return e, false
	}
	copy(e.hash[:], h)
	copy(e.dataHash[:], d)
	return e, true
}

// hashes are the entry's hash and dataHash as Applier.Unchanged takes them.
func (e renderMemoEntry) hashes() (hash, dataHash string) {
	return hex.EncodeToString(e.hash[:]), hex.EncodeToString(e.dataHash[:])
}

// get returns the entry of key when it was made from inputs.
func (m *renderMemo) get(key client.ObjectKey, inputs [16]byte) (renderMemoEntry, bool) {
	e, ok := m.byAddon.get(key)
	return e, ok && e.inputs == inputs
}

// renderInputs is the digest of what a values render and the ConfigMap it goes to depend on:
// the ClusterAddon (the owner) by UID; the stack by its artifact digest and path; the release's
// name, version and Kubernetes version; the Cluster and the objects it refers to (nil when it
// has none or it does not exist) by UID and resourceVersion, which every change of them moves;
// and the ClusterAddonOverrides that apply, in order, the same way. A resourceVersion also moves
// with changes no template reads (a status update, say): those cost a render, never skip one.
func renderInputs(parts []string, objs ...client.Object) [16]byte {
	h := fnv.New128a()
	var n [8]byte
	write := func(s string) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s))) // length-prefixed: no two lists collide
		_, _ = h.Write(n[:])
		_, _ = h.Write([]byte(s))
	}
	for _, p := range parts {
		write(p)
	}
	for _, o := range objs {
		if o == nil || isNilUnstructured(o) {
			write("-")
			continue
		}
		gvk := o.GetObjectKind().GroupVersionKind()
		write(gvk.Group + "/" + gvk.Kind)
		write(string(o.GetUID()))
		write(o.GetName())
		write(o.GetResourceVersion())
	}
	var out [16]byte
	copy(out[:], h.Sum(nil))
	return out
}

func isNilUnstructured(o client.Object) bool {
	u, ok := o.(*unstructured.Unstructured)
	return ok && u == nil
}
