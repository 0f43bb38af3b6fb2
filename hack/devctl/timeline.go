package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	"github.com/lifeline-k8s/lifeline/internal/bridge"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// registryPrefix is where the bridge keeps the demo pods' entries.
const registryPrefix = "/services/demo/"

// timeline follows the demo namespace's pods and the registry while a
// step runs, and prints every lifecycle state change, readiness change
// and registry write as it arrives, with the time since the step began.
// It also checks the seeds' promise: no entry is written for a pod that
// is not Ready.
type timeline struct {
	out   io.Writer
	start time.Time
	pods  map[string]seen
	// writes counts registry writes; unready lists entries written for a
	// pod not Ready. The pods and the registry are two streams with no
	// common order, so a write that arrives before the pod's Ready event
	// waits in pending for that event, for up to watchSlack.
	writes  int
	unready []string
	pending map[string]time.Time
	stop    context.CancelFunc
	done    sync.WaitGroup
}

// seen is what the timeline last saw of a pod.
type seen struct {
	state       string
	ready, gone bool
}

// follow starts a timeline from now.
func (e *devEnv) follow(ctx context.Context) (*timeline, error) {
	ctx, cancel := context.WithCancel(ctx)
	tl := &timeline{out: e.out, start: time.Now(), pods: map[string]seen{}, pending: map[string]time.Time{}, stop: cancel}
	pods := &corev1.PodList{}
	if err := e.k8s.List(ctx, pods, client.InNamespace("demo")); err != nil {
		cancel()
		return nil, err
	}
	for i := range pods.Items {
		tl.pods[pods.Items[i].Name] = see(&pods.Items[i])
	}
	podWatch, err := e.k8s.Watch(ctx, &corev1.PodList{}, client.InNamespace("demo"), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: pods.ResourceVersion}})
	if err != nil {
		cancel()
		return nil, err
	}
	head, err := e.etcd.Get(ctx, registryPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		cancel()
		podWatch.Stop()
		return nil, fmt.Errorf("reading the registry: %w", err)
	}
	regWatch := e.etcd.Watch(ctx, registryPrefix, clientv3.WithPrefix(), clientv3.WithRev(head.Header.Revision+1), clientv3.WithPrevKV())
	tl.done.Add(1)
	go func() {
		defer tl.done.Done()
		defer podWatch.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-podWatch.ResultChan():
				if !ok {
					return
				}
				tl.pod(ev)
			case resp, ok := <-regWatch:
				if !ok {
					return
				}
				for _, ev := range resp.Events {
					tl.registry(ev)
				}
			}
		}
	}()
	return tl, nil
}

// end stops following and prints what the step wrote to the registry.
func (tl *timeline) end() {
	tl.stop()
	tl.done.Wait()
	for pod := range tl.pending {
		tl.unready = append(tl.unready, pod)
	}
	sort.Strings(tl.unready)
	if len(tl.unready) == 0 {
		tl.line("registry", "%d writes; every entry was written for a Ready pod", tl.writes)
		return
	}
	tl.line("registry", "%d writes; entries written for pods that were not Ready: %s", tl.writes, strings.Join(tl.unready, ", "))
}

func see(p *corev1.Pod) seen {
	return seen{state: p.Labels[pub.LifecycleStateKey], ready: podfacts.HasReadyCondition(p), gone: p.DeletionTimestamp != nil}
}

func (tl *timeline) line(who, format string, a ...any) {
	fmt.Fprintf(tl.out, "  %+7.2fs  %-44s %s\n", time.Since(tl.start).Seconds(), who, fmt.Sprintf(format, a...))
}

// pod prints what changed in a pod that matters to its life: created,
// lifecycle state, readiness, terminating, deleted.
func (tl *timeline) pod(ev watch.Event) {
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	who := "pod " + p.Name
	was, known := tl.pods[p.Name]
	now := see(p)
	switch {
	case ev.Type == watch.Deleted:
		delete(tl.pods, p.Name)
		tl.line(who, "deleted")
		return
	case !known:
		tl.line(who, "created, %s", orDash(now.state))
	default:
		if now.state != was.state {
			tl.line(who, "%s → %s", orDash(was.state), orDash(now.state))
		}
		if now.ready != was.ready {
			tl.line(who, "Ready %t → %t", was.ready, now.ready)
		}
		if now.gone && !was.gone {
			tl.line(who, "terminating")
		}
	}
	tl.pods[p.Name] = now
	if now.ready {
		delete(tl.pending, p.Name)
	}
	tl.expire()
}

// watchSlack is how long a registry write may precede, in arrival order,
// the Ready event of its pod: the two watches are separate streams.
const watchSlack = 2 * time.Second

// expire counts as unready the pending writes whose pod was not seen
// Ready within watchSlack.
func (tl *timeline) expire() {
	for pod, at := range tl.pending {
		if time.Since(at) > watchSlack {
			tl.unready = append(tl.unready, pod)
			delete(tl.pending, pod)
		}
	}
}

// registry prints a registry write and checks that a written entry's pod
// is Ready.
func (tl *timeline) registry(ev *clientv3.Event) {
	tl.writes++
	kv := ev.Kv
	if ev.Type == clientv3.EventTypeDelete {
		kv = ev.PrevKv
	}
	var inst bridge.Instance
	if kv == nil || json.Unmarshal(kv.Value, &inst) != nil {
		tl.line("registry", "%s %s", ev.Type, string(ev.Kv.Key))
		return
	}
	if ev.Type == clientv3.EventTypeDelete {
		tl.line("registry", "− %s", inst.Pod)
		return
	}
	tl.line("registry", "+ %s (%s:%d, revision %s)", inst.Pod, inst.IP, inst.Port, podfacts.ShortHash(inst.Revision))
	if p, ok := tl.pods[inst.Pod]; !ok || !p.ready {
		tl.pending[inst.Pod] = time.Now()
	}
	tl.expire()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
