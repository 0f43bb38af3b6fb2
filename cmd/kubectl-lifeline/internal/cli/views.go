package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/cmd/kubectl-lifeline/internal/diagnose"
	"github.com/lifeline-k8s/lifeline/pkg/workload"
)

func (o *options) statusCmd() *cobra.Command {
	var watch bool
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "status (clone|asts|ads)/NAME",
		Short: "A rollout's progress, its pods by lifecycle state, and each pod that holds it up, why, and what would unblock it",
		Example: `  kubectl lifeline status clone/web
  kubectl lifeline status asts/db --watch
  kubectl lifeline status clone/web -o json`,
		Args: cobra.RangeArgs(1, 2),
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "print the view again whenever it changes, until interrupted")
	cmd.Flags().DurationVar(&interval, "interval", 2*time.Second, "how often --watch looks")
	cmd.RunE = o.workloadVerb(func(ctx context.Context, s *session, k workload.Kind, name string) error {
		view := func() (diagnose.StatusView, error) {
			snap, err := s.readWorkload(ctx, k, name)
			return diagnose.Status(snap), err
		}
		if !watch {
			v, err := view()
			if err != nil {
				return err
			}
			return s.printer.Status(v)
		}
		return s.watch(ctx, interval, view)
	})
	return cmd
}

// watch prints the status view each time it changes, with the time it was
// seen, until ctx ends.
func (s *session) watch(ctx context.Context, interval time.Duration, view func() (diagnose.StatusView, error)) error {
	var last string
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		v, err := view()
		if err != nil {
			return err
		}
		if key := changeKey(v); key != last {
			last = key
			fmt.Fprintf(s.printer.Out, "--- %s\n", s.now().Format(time.TimeOnly))
			if err := s.printer.Status(v); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// changeKey is what a change of the view is judged by: everything but the
// durations, which change every second without anything happening.
func changeKey(v diagnose.StatusView) string {
	v.Blockers = slices.Clone(v.Blockers)
	for i := range v.Blockers {
		v.Blockers[i].For, v.Blockers[i].Since = "", nil
		v.Blockers[i].Message = durations.ReplaceAllString(v.Blockers[i].Message, "")
	}
	v.Warnings = slices.Clone(v.Warnings)
	for i := range v.Warnings {
		v.Warnings[i].Age = ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// durations are the human durations a message may hold ("available in
// 12s").
var durations = regexp.MustCompile(`\b\d+(d|h|m|s)(\d+(h|m|s))?\b`)

func (o *options) explainCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "explain pod/NAME",
		Short: "A pod's lifecycle timeline, the budget that covers it and whether a disruption would be admitted now, its placement record and its hook operators' records",
		Example: `  kubectl lifeline explain pod/web-x7k2p
  kubectl lifeline explain pod web-x7k2p -o yaml`,
		Args: cobra.RangeArgs(1, 2),
	}
	cmd.RunE = o.run(func(ctx context.Context, s *session, args []string) error {
		t, err := s.resolve(args)
		if err != nil {
			return err
		}
		if err := want(t, schema.GroupKind{Kind: "Pod"}, "pod"); err != nil {
			return err
		}
		snap, err := s.readPod(ctx, t.Name)
		if err != nil {
			return err
		}
		return s.printer.Explain(diagnose.Explain(snap))
	})
	return cmd
}

// readPod reads a pod and everything its explain view needs, and asks the
// API server whether an eviction would be admitted now (dry run: nothing
// is evicted, no budget records anything).
func (s *session) readPod(ctx context.Context, name string) (diagnose.PodSnapshot, error) {
	snap := diagnose.PodSnapshot{Now: s.now()}
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, &snap.Pod); err != nil {
		return snap, err
	}
	snap.Owner = ownerOf(&snap.Pod)
	if k, wname, ok := ownerKind(&snap.Pod); ok {
		w, err := s.readWorkload(ctx, k, wname)
		if err != nil {
			return snap, fmt.Errorf("its workload %s/%s: %w", k.Short, wname, err)
		}
		snap.Workload = &w
	}
	var err error
	if snap.States, err = s.states(ctx); err != nil {
		return snap, err
	}
	events, err := s.events(ctx)
	if err != nil {
		return snap, err
	}
	for _, e := range events {
		if e.About("Pod/" + name) {
			snap.Events = append(snap.Events, e)
		}
	}
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: name},
		DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}}
	if err := s.cs.PolicyV1().Evictions(s.namespace).Evict(ctx, ev); err != nil {
		snap.Eviction = err.Error()
	} else {
		snap.EvictionOK = true
	}
	return snap, nil
}

func (o *options) budgetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "budget pub/NAME",
		Short:   "A PodUnavailableBudget's numbers, the pods it covers, and the disruptions it recorded with their expiry",
		Example: `  kubectl lifeline budget pub/web`,
		Args:    cobra.RangeArgs(1, 2),
	}
	cmd.RunE = o.run(func(ctx context.Context, s *session, args []string) error {
		t, err := s.resolve(args)
		if err != nil {
			return err
		}
		if err := want(t, schema.GroupKind{Group: "policy.kruise.io", Kind: "PodUnavailableBudget"}, "pub"); err != nil {
			return err
		}
		snap := diagnose.BudgetSnapshot{Now: s.now(), Owners: map[string]diagnose.OwnerRef{}}
		if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: t.Name}, &snap.Budget); err != nil {
			return err
		}
		pods := &corev1.PodList{}
		if err := s.c.List(ctx, pods, client.InNamespace(s.namespace)); err != nil {
			return err
		}
		snap.Pods = pods.Items
		for i := range pods.Items {
			snap.Owners[pods.Items[i].Name] = ownerOf(&pods.Items[i])
		}
		events, err := s.events(ctx)
		if err != nil {
			return err
		}
		ref := "PodUnavailableBudget/" + t.Name
		for _, e := range events {
			if e.About(ref) {
				snap.Events = append(snap.Events, e)
			}
		}
		return s.printer.Budget(diagnose.Budget(snap))
	})
	return cmd
}
