package bridge

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
)

// Registry is a service registry the bridge writes to. Every method
// succeeds only once the registry has done it: a handler that returns nil
// releases a hook, so "probably registered" is not good enough.
type Registry interface {
	// Register adds or replaces the instance.
	Register(ctx context.Context, inst Instance) error
	// Unregister removes the instance with this id; an absent one is
	// success.
	Unregister(ctx context.Context, id string) error
	// Entries lists the entries this bridge wrote that the registry holds.
	Entries(ctx context.Context) ([]Entry, error)
	// RemoveIfUnchanged removes an entry Entries returned unless it was
	// written again since, so a registration racing with the reconcile is
	// never undone.
	RemoveIfUnchanged(ctx context.Context, e Entry) error
	// RegisterIfAbsent adds the instance unless the registry holds an entry
	// for its id, so it never overwrites a handler's newer write.
	RegisterIfAbsent(ctx context.Context, inst Instance) error
}

// Entry is one entry of the registry that the bridge owns.
type Entry struct {
	ID string
	// UID is the UID of the pod the entry was written for.
	UID string
	// Version is the registry's version of the entry (etcd's mod
	// revision), for RemoveIfUnchanged.
	Version int64
	// IP and Port are the address the entry holds, when the registry says
	// (etcd does): an entry whose pod's address changed is corrected.
	IP   string
	Port int32
}

// NewRegistry connects to the configured backend; close releases it.
func NewRegistry(ctx context.Context, cfg *Config, log logr.Logger) (r Registry, close func() error, err error) {
	switch {
	case cfg.Etcd != nil:
		e, err := NewEtcd(ctx, *cfg.Etcd, log.WithName("etcd"))
		if err != nil {
			return nil, nil, err
		}
		return e, e.Close, nil
	case cfg.HTTP != nil:
		h, err := NewHTTP(*cfg.HTTP)
		if err != nil {
			return nil, nil, err
		}
		if err := h.Check(ctx); err != nil {
			return nil, nil, err
		}
		return h, func() error { return nil }, nil
	}
	return nil, nil, fmt.Errorf("no registry backend configured")
}

// Fenced is r whose writes first pass check (the lease fence of a bridge
// with leader election): a bridge that may no longer lead writes nothing
// to the registry either.
func Fenced(r Registry, check func() error) Registry { return &fenced{Registry: r, check: check} }

type fenced struct {
	Registry
	check func() error
}

func (f *fenced) Register(ctx context.Context, inst Instance) error {
	if err := f.check(); err != nil {
		return err
	}
	return f.Registry.Register(ctx, inst)
}

func (f *fenced) Unregister(ctx context.Context, id string) error {
	if err := f.check(); err != nil {
		return err
	}
	return f.Registry.Unregister(ctx, id)
}

func (f *fenced) RemoveIfUnchanged(ctx context.Context, e Entry) error {
	if err := f.check(); err != nil {
		return err
	}
	return f.Registry.RemoveIfUnchanged(ctx, e)
}

func (f *fenced) RegisterIfAbsent(ctx context.Context, inst Instance) error {
	if err := f.check(); err != nil {
		return err
	}
	return f.Registry.RegisterIfAbsent(ctx, inst)
}

// Changed passes on the registry's own news that it lost its entries (an
// etcd lease granted anew); nil, never ready, for one that has none.
func (f *fenced) Changed() <-chan struct{} {
	if c, ok := f.Registry.(interface{ Changed() <-chan struct{} }); ok {
		return c.Changed()
	}
	return nil
}
