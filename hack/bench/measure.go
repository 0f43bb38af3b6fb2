package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// rollout is one step of a suite.
type rollout struct {
	Suite          string `json:"suite"`
	Label          string `json:"label"`
	Implementation string `json:"implementation"`
	Workload       string `json:"workload"`
	Profile        string `json:"profile"`
	// Group is the table and chart the step goes in: its profile, and
	// "-narrow" for a latency-bound rollout (its own Deployment anchors it).
	Group      string `json:"group"`
	Step       string `json:"step"`
	StepDetail string `json:"step_detail"`
	Pods       int    `json:"pods"`

	WallSeconds float64 `json:"wall_s"`
	// Requests are the controller's, Events apart (see countRequests).
	Requests int `json:"controller_requests"`
	Events   int `json:"controller_events"`
	// EventsSettleSeconds is how long after the step's end its Events
	// kept coming (see eventsSettled); they count in the step.
	EventsSettleSeconds float64 `json:"events_settle_s"`
	PodWritesPerPod     float64 `json:"pod_writes_per_pod"`
	// Writes are every write of the controller's, Events included (the
	// native controllers' by their service accounts), and WritesPerPod
	// them per pod of the step.
	Writes       int     `json:"controller_writes"`
	WritesPerPod float64 `json:"writes_per_pod"`
	// WebhookCalls are the API server's admission webhook calls during
	// the step, whoever's webhook (apiserver_admission_webhook_request_total).
	WebhookCalls int `json:"webhook_calls"`
	// PodCreateP50Ms is the API server's latency of the controller's pod
	// creates.
	PodCreateP50Ms float64 `json:"pod_create_p50_ms"`
	// PodWriteP50/P99 are the API server's latency of the controller's
	// pod writes (creates, updates, patches, deletes, subresources).
	PodWriteP50Ms float64 `json:"pod_write_p50_ms"`
	PodWriteP99Ms float64 `json:"pod_write_p99_ms"`
	PlaneCPU      float64 `json:"control_plane_cpu_s"`
	KwokCPU       float64 `json:"kwok_cpu_s"`
	CtrlCPU       float64 `json:"controller_cpu_s"`
	CtrlPeakRSS   float64 `json:"controller_peak_rss_mib"`
	Binds         binds   `json:"binds"`
	// The binding webhook's pod reads that missed the manager's cache:
	// WebhookCreated were served by the create's answer the controller
	// kept, WebhookNotCreated left to the controller (neither showed the
	// pod), WebhookWaits waited for the cache to catch up (a standby's),
	// and WebhookLiveReads went to the API server.
	WebhookCreated    int `json:"webhook_created"`
	WebhookNotCreated int `json:"webhook_not_created"`
	WebhookWaits      int `json:"webhook_cache_waits"`
	WebhookLiveReads  int `json:"webhook_live_reads"`
	// WebhookP50/P99 are the pod mutating webhook's latency in the
	// manager (binds and kubelet reports), from its histogram.
	WebhookP50Ms float64 `json:"pod_webhook_p50_ms"`
	WebhookP99Ms float64 `json:"pod_webhook_p99_ms"`
}

// measure runs one step and takes its figures.
func (b *bench) measure(ctx context.Context, s suite, ns string, pods int,
	change func(context.Context) error, done func(context.Context) (bool, error)) (rollout, error) {
	r := rollout{Suite: s.name, Label: s.label(), Implementation: s.implementation, Workload: s.workload, Profile: string(s.profile), Group: s.group(), Pods: pods}
	ctrl := s.process(b)
	plane := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", ctrl}
	if ctrl == "kube-controller-manager" {
		plane = plane[:4]
	}
	cpuBefore := map[string]float64{}
	for _, p := range plane {
		cpuBefore[p] = cpuSeconds(b.c.PID(p))
	}
	auditStart := fileSize(b.audit)
	kwokBefore := cpuSeconds(b.c.PID("kwok"))
	reads := func(source string) float64 {
		if b.kruise != nil {
			return 0
		}
		return counter(b.l.MetricsURL, "lifeline_cloneset_binding_reads_total", map[string]string{"source": source})
	}
	webhook := func() reading {
		if b.kruise != nil {
			return reading{}
		}
		h, _ := histogram(b.l.MetricsURL, "controller_runtime_webhook_latency_seconds", "webhook", "/mutate-pod")
		return h
	}
	sources := []string{"created", "not-created", "cache-after-wait", "live"}
	readsBefore := map[string]float64{}
	for _, source := range sources {
		readsBefore[source] = reads(source)
	}
	webhookBefore := webhook()
	apiBefore := b.apiServer(ctx)
	b.profileAPIServer(ctx, s.name)
	// Under -v: the manager's reconciles by controller and result.
	reconciles := func() map[string]float64 {
		out := map[string]float64{}
		if b.kruise != nil || !b.o.verbose {
			return out
		}
		families, err := scraper.Families(b.l.MetricsURL)
		if err != nil {
			return out
		}
		// One scrape, every controller of the manager.
		for _, m := range families["controller_runtime_reconcile_total"].GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out[labels["controller"]+" "+labels["result"]] = m.GetCounter().GetValue()
		}
		return out
	}
	reconcilesBefore := reconciles()

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
	r.WallSeconds = time.Since(start).Seconds()
	stopWatch()
	settled := time.Now()
	if err := eventsSettled(ctx, b.audit, auditStart, s.users()); err != nil {
		return r, err
	}
	r.EventsSettleSeconds = time.Since(settled).Seconds()
	if b.o.verbose {
		fmt.Printf("    Events settled %.1f s after the step\n", r.EventsSettleSeconds)
	}

	for _, p := range plane {
		delta := cpuSeconds(b.c.PID(p)) - cpuBefore[p]
		if b.o.verbose {
			fmt.Printf("    %s: %.1f CPU s\n", p, delta)
		}
		r.PlaneCPU += delta
		if p == ctrl {
			r.CtrlCPU = delta
		}
	}
	r.KwokCPU = cpuSeconds(b.c.PID("kwok")) - kwokBefore
	r.CtrlPeakRSS = float64(peak.Load()) / (1 << 20)
	r.PodWritesPerPod = float64(writes.Load()) / float64(pods)
	readsSince := func(source string) int { return int(reads(source) - readsBefore[source]) }
	r.WebhookCreated, r.WebhookNotCreated = readsSince("created"), readsSince("not-created")
	r.WebhookWaits, r.WebhookLiveReads = readsSince("cache-after-wait"), readsSince("live")
	if after := webhook(); after.count > webhookBefore.count {
		r.WebhookP50Ms, r.WebhookP99Ms = 1000*quantile(webhookBefore, after, 0.5), 1000*quantile(webhookBefore, after, 0.99)
	}
	a, err := readAudit(b.audit, auditStart, s.users())
	if err != nil {
		return r, err
	}
	r.Requests, r.Events, r.Binds = a.requests, a.events, a.binds
	r.Writes, r.PodCreateP50Ms = a.writes, a.podCreateP50
	if pods > 0 {
		r.WritesPerPod = float64(a.writes) / float64(pods)
	}
	apiAfter := b.apiServer(ctx)
	r.WebhookCalls = int(apiAfter.calls - apiBefore.calls)
	r.Binds.APIMeanMs, r.Binds.WebhookMeanMs = meanMs(apiBefore.bindTotal, apiAfter.bindTotal), meanMs(apiBefore.bindHook, apiAfter.bindHook)
	if b.o.verbose {
		fmt.Printf("    API server: pod creates %.0f, mean %.2f ms; admission policy checks %.0f, mean %.3f ms\n",
			apiAfter.createTotal.count-apiBefore.createTotal.count, meanMs(apiBefore.createTotal, apiAfter.createTotal),
			apiAfter.policies.count-apiBefore.policies.count, meanMs(apiBefore.policies, apiAfter.policies))
		for _, level := range slices.Sorted(maps.Keys(apiAfter.queued)) {
			if n := apiAfter.queued[level].count - apiBefore.queued[level].count; n > 0 {
				fmt.Printf("    API server: %.0f requests of priority level %s waited in queue %.2f ms on average\n", n, level, meanMs(apiBefore.queued[level], apiAfter.queued[level]))
			}
		}
	}
	if b.o.verbose {
		for _, k := range slices.Sorted(maps.Keys(a.byKind)) {
			fmt.Printf("    %6d %s\n", a.byKind[k], k)
		}
		after := reconciles()
		for _, k := range slices.Sorted(maps.Keys(after)) {
			if n := after[k] - reconcilesBefore[k]; n > 0 {
				fmt.Printf("    %6.0f reconciles: %s\n", n, k)
			}
		}
	}
	r.PodWriteP50Ms, r.PodWriteP99Ms = a.podWriteP50, a.podWriteP99
	return r, nil
}

// eventQuiet is how long no Event of a step's controllers may be written
// before the step's Events are taken to be all posted.
const eventQuiet = 5 * time.Second

// eventsSettled waits until the controllers' Events of a step stop coming.
// Each recorder posts through a queue of its own, one Event at a time, so
// at a loaded API server a step's Events land seconds after its pods do:
// on 11-29, 838 of a suite's 1,259 Lifeline Events fell inside the in-place
// scale-up of 50 CloneSets while most of the Deployments' fell into the
// rollout's window after theirs. Counting each step's Events in that step,
// on both sides, makes the per-step comparison fair.
func eventsSettled(ctx context.Context, audit string, offset int64, users []string) error {
	last, quietSince := -1, time.Now()
	return wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(context.Context) (bool, error) {
		a, err := readAudit(audit, offset, users)
		if err != nil {
			return false, err
		}
		if a.events != last {
			last, quietSince = a.events, time.Now()
		}
		return time.Since(quietSince) >= eventQuiet, nil
	})
}

// binds are the scheduler's binds during a step, from the audit log: how
// many, their latency at the API server (webhook included), and how many
// per second from the first bind to the last.
type binds struct {
	Count  int     `json:"count"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	PerSec float64 `json:"per_s"`
	// APIMeanMs is the binds' mean time at the API server by its own
	// histogram, and WebhookMeanMs the mean of its calls to the pod
	// binding webhook in that time (0: none was called).
	APIMeanMs     float64 `json:"api_mean_ms"`
	WebhookMeanMs float64 `json:"webhook_mean_ms"`
}

// audited is what the audit log says about a step.
type audited struct {
	requests, events int
	// writes are the creates, updates, patches and deletes, Events
	// included.
	writes       int
	podCreateP50 float64
	// byKind counts the requests by verb, resource and response code,
	// which -v prints.
	byKind                   map[string]int
	podWriteP50, podWriteP99 float64
	binds                    binds
}

// readAudit reads the audit log from offset on: the requests of users,
// apart from the Events they post, which are counted on their own (each of
// kube-controller-manager's controllers posts under its service account,
// as it sends its other requests), and every write of theirs, Events
// included; the latency of their pod creates and writes; and the
// scheduler's binds.
func readAudit(path string, offset int64, users []string) (audited, error) {
	out := audited{byKind: map[string]int{}}
	want := map[string]bool{}
	for _, u := range users {
		want[u] = true
	}
	var writes, creates, bindLatencies []time.Duration
	var first, last time.Time
	err := cluster.EachAuditEvent(path, offset, func(line []byte) {
		var event struct {
			User struct {
				Username string `json:"username"`
			} `json:"user"`
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
		if json.Unmarshal(line, &event) != nil || event.Verb == "watch" {
			return
		}
		took := event.Done.Sub(event.Received)
		if event.Verb == "create" && event.ObjectRef.Resource == "pods" && event.ObjectRef.Subresource == "binding" && event.ResponseStatus.Code == 201 {
			bindLatencies = append(bindLatencies, took)
			if first.IsZero() || event.Received.Before(first) {
				first = event.Received
			}
			if event.Done.After(last) {
				last = event.Done
			}
		}
		if !want[event.User.Username] {
			return
		}
		if slices.Contains([]string{"create", "update", "patch", "delete", "deletecollection"}, event.Verb) {
			out.writes++
		}
		if event.Verb == "create" && event.ObjectRef.Resource == "pods" && event.ObjectRef.Subresource == "" {
			creates = append(creates, took)
		}
		switch {
		case event.ObjectRef.Resource == "events":
			out.events++
			return
		case event.ObjectRef.Resource == "pods" && slices.Contains([]string{"create", "update", "patch", "delete"}, event.Verb):
			writes = append(writes, took)
		}
		out.requests++
		resource := event.ObjectRef.Resource
		if event.ObjectRef.Subresource != "" {
			resource += "/" + event.ObjectRef.Subresource
		}
		out.byKind[fmt.Sprintf("%s %s %d", event.Verb, resource, event.ResponseStatus.Code)]++
	})
	out.podWriteP50, out.podWriteP99 = percentileMs(writes, 0.5), percentileMs(writes, 0.99)
	out.podCreateP50 = percentileMs(creates, 0.5)
	out.binds = binds{Count: len(bindLatencies), P50Ms: percentileMs(bindLatencies, 0.5), P99Ms: percentileMs(bindLatencies, 0.99)}
	if span := last.Sub(first).Seconds(); span > 0 {
		out.binds.PerSec = float64(len(bindLatencies)) / span
	}
	return out, err
}

// percentileMs is the q-quantile of ds in milliseconds, 0 for none.
func percentileMs(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ms(ds[min(len(ds)-1, int(q*float64(len(ds))))])
}

func fileSize(path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return info.Size()
}

// cpuSeconds and rssBytes read a process's CPU time and RSS from /proc.
var cpuSeconds, rssBytes = cluster.CPUSeconds, cluster.RSSBytes

// apiServerReading is what the API server's own metrics say so far: its
// admission webhook calls, every webhook's
// (apiserver_admission_webhook_request_total), and two histograms of the
// scheduler's binds, the requests' whole time at the API server
// (apiserver_request_duration_seconds of pods/binding) and the part spent
// calling the pod binding webhook (mpod.lifeline.dev, which takes binds
// only): where a bind's milliseconds go.
type apiServerReading struct {
	calls               float64
	bindTotal, bindHook reading
	// createTotal is the pod creates' time at the API server, policies
	// the ValidatingAdmissionPolicies' checks (every policy's).
	createTotal, policies reading
	// queued is the time requests waited in API Priority and Fairness
	// queues, by priority level.
	queued map[string]reading
}

func (b *bench) apiServer(ctx context.Context) apiServerReading {
	families, err := b.apiServerMetrics(ctx)
	if err != nil {
		return apiServerReading{}
	}
	var out apiServerReading
	for _, m := range families["apiserver_admission_webhook_request_total"].GetMetric() {
		out.calls += m.GetCounter().GetValue()
	}
	out.bindTotal = sumHistograms(families["apiserver_request_duration_seconds"], map[string]string{"resource": "pods", "subresource": "binding"})
	out.bindHook = sumHistograms(families["apiserver_admission_webhook_admission_duration_seconds"], map[string]string{"name": "mpod.lifeline.dev"})
	out.createTotal = sumHistograms(families["apiserver_request_duration_seconds"], map[string]string{"resource": "pods", "subresource": "", "verb": "POST"})
	out.policies = sumHistograms(families["apiserver_validating_admission_policy_check_duration_seconds"], nil)
	out.queued = map[string]reading{}
	for _, level := range []string{"system", "leader-election", "workload-high", "workload-low", "global-default", "node-high", "exempt"} {
		out.queued[level] = sumHistograms(families["apiserver_flowcontrol_request_wait_duration_seconds"], map[string]string{"priority_level": level, "execute": "true"})
	}
	return out
}

// apiServerMetrics is one scrape of the API server's /metrics.
func (b *bench) apiServerMetrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	raw, err := b.client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(bytes.NewReader(raw))
}

// sumHistograms adds up the series of f whose labels include match.
func sumHistograms(f *dto.MetricFamily, match map[string]string) reading {
	var r reading
metric:
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if want, ok := match[l.GetName()]; ok && want != l.GetValue() {
				continue metric
			}
		}
		h := m.GetHistogram()
		r.count += float64(h.GetSampleCount())
		r.sum += h.GetSampleSum()
		for i, b := range h.GetBucket() {
			if i == len(r.buckets) {
				r.buckets = append(r.buckets, bucket{le: b.GetUpperBound()})
			}
			r.buckets[i].count += float64(b.GetCumulativeCount())
		}
	}
	return r
}

// meanMs is the mean of the observations between two readings, in ms.
func meanMs(before, after reading) float64 {
	if after.count <= before.count {
		return 0
	}
	return 1000 * (after.sum - before.sum) / (after.count - before.count)
}

// profileAPIServer writes, under -apiserver-profiles, a CPU profile of
// kube-apiserver over the step's first 15 s, taken in the background.
func (b *bench) profileAPIServer(ctx context.Context, suite string) {
	if b.o.apiProfiles == "" {
		return
	}
	b.profiles++
	path := filepath.Join(b.o.apiProfiles, fmt.Sprintf("%s-%d.pprof", suite, b.profiles))
	go func() {
		raw, err := b.client.Discovery().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", "15").DoRaw(ctx)
		if err == nil {
			err = os.WriteFile(path, raw, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: profiling kube-apiserver:", err)
		}
	}()
}
