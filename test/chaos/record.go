package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/lifeline-k8s/lifeline/hack/cluster"
	"github.com/lifeline-k8s/lifeline/internal/bridge"
)

// Recorder keeps every pod write of one namespace and every registry
// write, as the watches of its own see them. It watches the cluster's
// etcd rather than the API server: a watch through the API server loses
// the writes made while it restarts (it must list again), one on etcd
// resumes at the next revision.
type Recorder struct {
	mu       sync.Mutex
	pods     []PodRev
	registry []RegistryWrite
	records  []Records
	// broken says why a watch ended early: the record has a gap.
	broken []string
}

// WatchPods records the pods of ns from etcd, from now on.
func (r *Recorder) WatchPods(ctx context.Context, etcd *clientv3.Client, ns string) error {
	prefix := "/registry/pods/" + ns + "/"
	decoder := serializer.NewCodecFactory(clientgoscheme.Scheme).UniversalDeserializer()
	decode := func(b []byte) (*corev1.Pod, error) {
		obj, _, err := decoder.Decode(b, nil, nil)
		if err != nil {
			return nil, err
		}
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, fmt.Errorf("not a pod: %T", obj)
		}
		return pod, nil
	}
	return r.watch(ctx, etcd, prefix, "pods", func(ev *clientv3.Event, at time.Time) error {
		gone := ev.Type == clientv3.EventTypeDelete
		kv := ev.Kv
		if gone {
			kv = ev.PrevKv
		}
		if kv == nil {
			return fmt.Errorf("%s deleted without its last value", ev.Kv.Key)
		}
		pod, err := decode(kv.Value)
		if err != nil {
			return err
		}
		rev := RevOf(pod, at, gone)
		rev.Rev = ev.Kv.ModRevision
		r.pods = append(r.pods, rev)
		return nil
	})
}

// WatchRecords records the PersistentPodStates of ns from etcd (stored as
// JSON), from now on.
func (r *Recorder) WatchRecords(ctx context.Context, etcd *clientv3.Client, ns string) error {
	return r.watch(ctx, etcd, "/registry/apps.kruise.io/persistentpodstates/"+ns+"/", "records", func(ev *clientv3.Event, at time.Time) error {
		rec := Records{Rev: ev.Kv.ModRevision, At: at, Zones: map[string]string{}}
		key := strings.Split(string(ev.Kv.Key), "/")
		rec.Workload = key[len(key)-1]
		if ev.Type == clientv3.EventTypePut {
			var state struct {
				Status struct {
					PodStates map[string]struct {
						NodeTopologyLabels map[string]string `json:"nodeTopologyLabels"`
					} `json:"podStates"`
				} `json:"status"`
			}
			if err := json.Unmarshal(ev.Kv.Value, &state); err != nil {
				return fmt.Errorf("%s: %w", ev.Kv.Key, err)
			}
			for pod, s := range state.Status.PodStates {
				if zone := s.NodeTopologyLabels[corev1.LabelTopologyZone]; zone != "" {
					rec.Zones[pod] = zone
				}
			}
		}
		r.records = append(r.records, rec)
		return nil
	})
}

// WatchRegistry records every write under prefix of the bridge's etcd.
func (r *Recorder) WatchRegistry(ctx context.Context, etcd *clientv3.Client, prefix string) error {
	return r.watch(ctx, etcd, prefix, "registry", func(ev *clientv3.Event, at time.Time) error {
		kv := ev.Kv
		if ev.Type == clientv3.EventTypeDelete {
			kv = ev.PrevKv
		}
		w := RegistryWrite{At: at, Key: string(ev.Kv.Key), Put: ev.Type == clientv3.EventTypePut}
		if kv != nil {
			var inst bridge.Instance
			if err := json.Unmarshal(kv.Value, &inst); err != nil {
				return fmt.Errorf("%s: %w", ev.Kv.Key, err)
			}
			w.Namespace, w.Pod, w.UID = inst.Namespace, inst.Pod, inst.UID
		}
		r.registry = append(r.registry, w)
		return nil
	})
}

func (r *Recorder) watch(ctx context.Context, etcd *clientv3.Client, prefix, what string, record func(*clientv3.Event, time.Time) error) error {
	resp, err := etcd.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return fmt.Errorf("reading %s: %w", what, err)
	}
	ch := etcd.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithPrevKV(), clientv3.WithRev(resp.Header.Revision+1))
	go func() {
		for resp := range ch {
			at := time.Now()
			r.mu.Lock()
			if err := resp.Err(); err != nil && !resp.IsProgressNotify() {
				if resp.Canceled || resp.CompactRevision != 0 {
					r.broken = append(r.broken, fmt.Sprintf("%s watch: %v", what, err))
				}
			}
			for _, ev := range resp.Events {
				if err := record(ev, at); err != nil {
					r.broken = append(r.broken, fmt.Sprintf("%s watch: %v", what, err))
				}
			}
			r.mu.Unlock()
		}
		if ctx.Err() == nil {
			r.mu.Lock()
			r.broken = append(r.broken, what+" watch ended")
			r.mu.Unlock()
		}
	}()
	return nil
}

// Pods is a copy of the pod writes so far.
func (r *Recorder) Pods() []PodRev {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]PodRev(nil), r.pods...)
}

// Registry is a copy of the registry writes so far.
func (r *Recorder) Registry() []RegistryWrite {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]RegistryWrite(nil), r.registry...)
}

// Records is a copy of the placement records so far.
func (r *Recorder) Records() []Records {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Records(nil), r.records...)
}

// Broken says why the record has gaps; none when empty.
func (r *Recorder) Broken() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.broken...)
}

// ReadAuditWrites reads the writes (create, update, patch, delete) of
// clients whose user agent starts with agent from a JSON audit log. It
// also returns how many events of the log it could not read (cut short by
// the log backend, see cluster.EachAuditEvent).
func ReadAuditWrites(path, agent string) ([]AuditWrite, int, error) {
	var out []AuditWrite
	unread := 0
	err := cluster.EachAuditEvent(path, 0, func(event []byte) {
		if !bytes.Contains(event, []byte(agent)) {
			if !json.Valid(event) { // a cut event may have lost its user agent
				unread++
			}
			return
		}
		w, ok, err := auditWrite(event, agent)
		switch {
		case err != nil:
			unread++
		case ok:
			out = append(out, w)
		}
	})
	return out, unread, err
}

// auditWrite decodes one event and reports whether it is a completed write
// by a client whose user agent starts with agent.
func auditWrite(event []byte, agent string) (AuditWrite, bool, error) {
	var ev struct {
		Stage     string `json:"stage"`
		Verb      string `json:"verb"`
		UserAgent string `json:"userAgent"`
		ObjectRef struct {
			Resource, Subresource, Name string
		} `json:"objectRef"`
		Received time.Time `json:"requestReceivedTimestamp"`
	}
	if err := json.Unmarshal(event, &ev); err != nil {
		return AuditWrite{}, false, err
	}
	switch ev.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
	default:
		return AuditWrite{}, false, nil
	}
	if ev.Stage != "ResponseComplete" || !strings.HasPrefix(ev.UserAgent, agent) {
		return AuditWrite{}, false, nil
	}
	return AuditWrite{At: ev.Received, UserAgent: ev.UserAgent, Verb: ev.Verb,
		Resource: ev.ObjectRef.Resource, Subresource: ev.ObjectRef.Subresource, Name: ev.ObjectRef.Name}, true, nil
}
