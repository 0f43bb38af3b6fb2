package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

type bench struct {
	c              *cluster.Cluster
	k8s            ctrlclient.Client
	client         kubernetes.Interface
	audit          string
	pods, down     int
	verbose        bool
	webhookRemoved bool
	// pprof is the manager's pprof address (host:port).
	pprof string
}

// removeBindingWebhook takes the pod binding webhook out of lifeline's
// mutating webhook configuration, as on a cluster where it is not
// installed; the controller then moves pods to Normal itself.
func removeBindingWebhook(ctx context.Context, k8s ctrlclient.Client) error {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := k8s.Get(ctx, ctrlclient.ObjectKey{Name: "lifeline-mutating-webhooks"}, cfg); err != nil {
		return err
	}
	cfg.Webhooks = slices.DeleteFunc(cfg.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name == "mpod.lifeline.dev" })
	return k8s.Update(ctx, cfg)
}

// measure runs one scenario and takes its figures.
func (b *bench) measure(ctx context.Context, kind, ns, ctrl, name string, pods int,
	change func(context.Context) error, done func(context.Context) (bool, error)) (result, error) {
	r := result{scenario: name, kind: kind, pods: pods}
	plane := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "lifeline-manager"}
	cpuBefore := map[string]float64{}
	for _, p := range plane {
		cpuBefore[p] = cpuSeconds(b.c.PID(p))
	}
	auditStart := fileSize(b.audit)
	kwokBefore := cpuSeconds(b.c.PID("kwok"))

	// A RetryWatcher resumes where the API server closed a watch, so a
	// watch dropped under load does not lose writes.
	var writes atomic.Int64
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	list, err := b.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return r, err
	}
	w, err := watchtools.NewRetryWatcherWithContext(watchCtx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			return b.client.CoreV1().Pods(ns).Watch(ctx, options)
		},
	})
	if err != nil {
		return r, err
	}
	defer w.Stop()
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type != watch.Bookmark && ev.Type != watch.Error {
				writes.Add(1)
			}
		}
	}()
	var peak atomic.Int64
	go func() {
		for watchCtx.Err() == nil {
			if rss := rssBytes(b.c.PID(ctrl)); rss > peak.Load() {
				peak.Store(rss)
			}
			time.Sleep(100 * time.Millisecond) // sampling period of a measurement, not a wait for a condition
		}
	}()

	start := time.Now()
	if err := change(ctx); err != nil {
		return r, err
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Minute, true, done); err != nil {
		return r, err
	}
	r.wall = time.Since(start)
	stopWatch()

	for _, p := range plane {
		delta := cpuSeconds(b.c.PID(p)) - cpuBefore[p]
		if b.verbose {
			fmt.Printf("    %s: %.1f CPU s\n", p, delta)
		}
		r.planeCPU += delta
		if p == ctrl {
			r.ctrlCPU = delta
		}
	}
	r.kwokCPU = cpuSeconds(b.c.PID("kwok")) - kwokBefore
	r.ctrlPeakRSS = peak.Load()
	r.podWritesPerPod = float64(writes.Load()) / float64(pods)
	r.requests, r.events, err = countRequests(b.audit, auditStart, controllerUsers[kind])
	if err != nil {
		return r, err
	}
	r.binds, err = bindTimes(b.audit, auditStart)
	return r, err
}

// bindFigures are the scheduler's binds during a scenario, from the audit
// log: how many, their latency at the API server (webhook included), and
// how many per second from the first bind to the last.
type bindFigures struct {
	count    int
	p50, p99 time.Duration
	perSec   float64
}

func bindTimes(path string, offset int64) (bindFigures, error) {
	f, err := os.Open(path)
	if err != nil {
		return bindFigures{}, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		return bindFigures{}, err
	}
	var latencies []time.Duration
	var first, last time.Time
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 1<<24)
	for scanner.Scan() {
		var event struct {
			Verb      string `json:"verb"`
			ObjectRef struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
			} `json:"objectRef"`
			ResponseStatus struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
			Received time.Time `json:"requestReceivedTimestamp"`
			Done     time.Time `json:"stageTimestamp"`
		}
		if json.Unmarshal(scanner.Bytes(), &event) != nil || event.Verb != "create" || event.ObjectRef.Resource != "pods" ||
			event.ObjectRef.Subresource != "binding" || event.ResponseStatus.Code != 201 {
			continue
		}
		latencies = append(latencies, event.Done.Sub(event.Received))
		if first.IsZero() || event.Received.Before(first) {
			first = event.Received
		}
		if event.Done.After(last) {
			last = event.Done
		}
	}
	if len(latencies) == 0 {
		return bindFigures{}, scanner.Err()
	}
	slices.Sort(latencies)
	at := func(q float64) time.Duration { return latencies[min(len(latencies)-1, int(q*float64(len(latencies))))] }
	fig := bindFigures{count: len(latencies), p50: at(0.50), p99: at(0.99)}
	if span := last.Sub(first).Seconds(); span > 0 {
		fig.perSec = float64(len(latencies)) / span
	}
	return fig, scanner.Err()
}

// countRequests counts the audit log's requests by users, from offset on,
// apart from the Events they post, which are counted on their own:
// kube-controller-manager posts its controllers' Events under its own name,
// not theirs, so counting them for one side only would be unfair.
func countRequests(path string, offset int64, users []string) (requests, events int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		return 0, 0, err
	}
	want := map[string]bool{}
	for _, u := range users {
		want[u] = true
	}
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 1<<24)
	for scanner.Scan() {
		var event struct {
			User struct {
				Username string `json:"username"`
			} `json:"user"`
			Verb      string `json:"verb"`
			ObjectRef struct {
				Resource string `json:"resource"`
			} `json:"objectRef"`
		}
		if json.Unmarshal(scanner.Bytes(), &event) != nil || !want[event.User.Username] || event.Verb == "watch" {
			continue
		}
		if event.ObjectRef.Resource == "events" {
			events++
		} else {
			requests++
		}
	}
	return requests, events, scanner.Err()
}

func fileSize(path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return info.Size()
}

// cpuSeconds is a process's user and system CPU time from /proc.
func cpuSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil || pid == 0 {
		return 0
	}
	// Fields after the command name, which may hold spaces, end with ')'.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100 // USER_HZ
}

// rssBytes is a process's resident set size from /proc.
func rssBytes(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil || pid == 0 {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			kb, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}
