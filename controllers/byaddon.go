package controllers

import (
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// byAddon is a value per ClusterAddon that the ClusterAddon reconciler keeps in memory only (a
// restarted process knows none), safe for concurrent use; an entry is dropped with its
// ClusterAddon (forget).
type byAddon[V any] struct {
	mu      sync.Mutex
	entries map[client.ObjectKey]V
}

// get returns key's value and whether there is one.
func (b *byAddon[V]) get(key client.ObjectKey) (V, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.entries[key]
	return v, ok
}

// put sets key's value.
func (b *byAddon[V]) put(key client.ObjectKey, v V) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.entries == nil {
		b.entries = map[client.ObjectKey]V{}
	}
	b.entries[key] = v
}

// forget drops key's value.
func (b *byAddon[V]) forget(key client.ObjectKey) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, key)
}
