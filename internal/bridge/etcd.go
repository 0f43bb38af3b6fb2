package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Etcd is the etcd registry: one key per instance under a prefix, each
// attached to one lease the bridge keeps alive, so the entries of a bridge
// that died expire after the lease's TTL. The lease's id is kept in etcd
// too, so a restarted bridge picks up its lease and its entries as they
// are, writing nothing, instead of registering everything again.
type Etcd struct {
	cfg    EtcdConfig
	client *clientv3.Client
	log    logr.Logger
	// changed is signalled when the bridge had to take a new lease, its
	// old one having expired with its entries: the pods in service must be
	// registered again.
	changed chan struct{}

	mu    sync.Mutex
	lease clientv3.LeaseID
}

// NewEtcd connects to etcd and takes over the bridge's lease if it is
// still alive, or grants a new one. The lease is kept alive until ctx
// ends; if it is lost meanwhile (etcd unreachable for longer than the TTL),
// a new one is granted and Changed says so.
func NewEtcd(ctx context.Context, cfg EtcdConfig, log logr.Logger) (*Etcd, error) {
	ccfg, err := cfg.clientConfig()
	if err != nil {
		return nil, err
	}
	ccfg.Context = ctx
	client, err := clientv3.New(ccfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to etcd %v: %w", cfg.Endpoints, err)
	}
	e := &Etcd{cfg: cfg, client: client, log: log, changed: make(chan struct{}, 1)}
	if err := e.takeLease(ctx); err != nil {
		client.Close()
		return nil, fmt.Errorf("etcd.endpoints %v: cannot use the registry: %w", cfg.Endpoints, err)
	}
	go e.keepAlive(ctx)
	return e, nil
}

// Changed is signalled when the bridge's lease was replaced.
func (e *Etcd) Changed() <-chan struct{} { return e.changed }

// Close closes the connection; the lease lives on until its TTL, so a
// bridge that restarts within it keeps its entries.
func (e *Etcd) Close() error { return e.client.Close() }

// Lease is the id of the lease the bridge's entries are attached to.
func (e *Etcd) Lease() clientv3.LeaseID {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lease
}

// takeLease resumes the lease whose id the lease key holds, if it is
// still alive, or grants a new one and records its id (attached to the
// lease itself, so the record goes when the lease does).
func (e *Etcd) takeLease(ctx context.Context) error {
	rctx, cancel := e.request(ctx)
	defer cancel()
	resp, err := e.client.Get(rctx, e.cfg.LeaseKey)
	if err != nil {
		return fmt.Errorf("reading the bridge's lease: %w", err)
	}
	if len(resp.Kvs) == 1 {
		if id, err := strconv.ParseInt(string(resp.Kvs[0].Value), 16, 64); err == nil {
			ttl, err := e.client.TimeToLive(rctx, clientv3.LeaseID(id))
			if err == nil && ttl.TTL > 0 {
				e.setLease(clientv3.LeaseID(id))
				e.log.Info("resumed the bridge's lease; its entries stay as they are", "lease", fmt.Sprintf("%x", id), "ttl", ttl.TTL)
				return nil
			}
		}
	}
	grant, err := e.client.Grant(rctx, int64(e.cfg.TTL.Duration/time.Second))
	if err != nil {
		return fmt.Errorf("granting a lease: %w", err)
	}
	if _, err := e.client.Put(rctx, e.cfg.LeaseKey, strconv.FormatInt(int64(grant.ID), 16), clientv3.WithLease(grant.ID)); err != nil {
		return fmt.Errorf("recording the bridge's lease: %w", err)
	}
	e.setLease(grant.ID)
	e.log.Info("granted a new lease", "lease", fmt.Sprintf("%x", grant.ID), "ttl", grant.TTL)
	return nil
}

func (e *Etcd) setLease(id clientv3.LeaseID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lease = id
}

// keepAlive keeps the lease alive until ctx ends. When the keep-alive
// stream ends while ctx goes on, the lease is lost or etcd unreachable:
// it takes the lease again (a new one if it expired), retrying until etcd
// answers, and signals Changed.
func (e *Etcd) keepAlive(ctx context.Context) {
	for ctx.Err() == nil {
		ch, err := e.client.KeepAlive(ctx, e.Lease())
		if err == nil {
			for range ch {
			}
		}
		if ctx.Err() != nil {
			return
		}
		e.log.Info("lost the lease's keep-alive; taking a lease again")
		old := e.Lease()
		for ctx.Err() == nil {
			if err := e.takeLease(ctx); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
		if e.Lease() != old {
			select {
			case e.changed <- struct{}{}:
			default:
			}
		}
	}
}

func (e *Etcd) request(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, e.cfg.RequestTimeout.Duration)
}

func (e *Etcd) key(id string) string { return e.cfg.Prefix + "/" + id }

// Register puts the instance, attached to the bridge's lease, unless the
// key already holds exactly that under that lease: a handler called again
// (after a restart between its call and its release) writes nothing.
func (e *Etcd) Register(ctx context.Context, inst Instance) error {
	value, err := json.Marshal(inst)
	if err != nil {
		return err
	}
	ctx, cancel := e.request(ctx)
	defer cancel()
	key, lease := e.key(inst.ID()), e.Lease()
	_, err = e.client.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(key), "=", string(value)), clientv3.Compare(clientv3.LeaseValue(key), "=", lease)).
		Else(clientv3.OpPut(key, string(value), clientv3.WithLease(lease))).Commit()
	return err
}

// Unregister deletes the instance's key.
func (e *Etcd) Unregister(ctx context.Context, id string) error {
	ctx, cancel := e.request(ctx)
	defer cancel()
	_, err := e.client.Delete(ctx, e.key(id))
	return err
}

// Entries lists the keys under the prefix attached to the bridge's lease:
// its own entries, and no one else's.
func (e *Etcd) Entries(ctx context.Context) ([]Entry, error) {
	ctx, cancel := e.request(ctx)
	defer cancel()
	resp, err := e.client.Get(ctx, e.cfg.Prefix+"/", clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	lease := e.Lease()
	var out []Entry
	for _, kv := range resp.Kvs {
		if clientv3.LeaseID(kv.Lease) != lease {
			continue
		}
		var s Instance
		_ = json.Unmarshal(kv.Value, &s)
		out = append(out, Entry{ID: strings.TrimPrefix(string(kv.Key), e.cfg.Prefix+"/"), UID: s.UID, Version: kv.ModRevision, IP: s.IP, Port: s.Port})
	}
	return out, nil
}

// RemoveIfUnchanged deletes the entry's key if its mod revision is still
// the one listed.
func (e *Etcd) RemoveIfUnchanged(ctx context.Context, entry Entry) error {
	ctx, cancel := e.request(ctx)
	defer cancel()
	key := e.key(entry.ID)
	_, err := e.client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", entry.Version)).Then(clientv3.OpDelete(key)).Commit()
	return err
}

// RegisterIfAbsent puts the instance if its key does not exist.
func (e *Etcd) RegisterIfAbsent(ctx context.Context, inst Instance) error {
	value, err := json.Marshal(inst)
	if err != nil {
		return err
	}
	ctx, cancel := e.request(ctx)
	defer cancel()
	key := e.key(inst.ID())
	_, err = e.client.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(value), clientv3.WithLease(e.Lease()))).Commit()
	return err
}
