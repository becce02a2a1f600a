package dashboard

import (
	"sync"
)

// Hub tells the open pages that objects changed. The informers' event handlers call Notify;
// each page's event stream subscribes for the namespace it shows ("" for every namespace).
// A subscriber's channel holds one pending notification: changes that come while it is
// pending are folded into it, so a burst of 10,000 events wakes a page once.
type Hub struct {
	mu   sync.Mutex
	subs map[*subscription]struct{}
}

type subscription struct {
	ns string
	ch chan struct{}
}

// NewHub returns a hub without subscribers.
func NewHub() *Hub { return &Hub{subs: map[*subscription]struct{}{}} }

// Notify tells the subscribers of namespace ns, and those of every namespace, that something
// changed. A cluster-scoped object (ns "") concerns every subscriber.
func (h *Hub) Notify(ns string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if s.ns != "" && ns != "" && s.ns != ns {
			continue
		}
		select {
		case s.ch <- struct{}{}:
		default:
		}
	}
}

// Subscribe returns a channel that receives a value after changes in namespace ns ("" for
// every namespace), and the function that ends the subscription.
func (h *Hub) Subscribe(ns string) (<-chan struct{}, func()) {
	s := &subscription{ns: ns, ch: make(chan struct{}, 1)}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s.ch, func() {
		h.mu.Lock()
		delete(h.subs, s)
		h.mu.Unlock()
	}
}

// Subscribers counts the open subscriptions.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}
