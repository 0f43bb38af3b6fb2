package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/lifeline-k8s/lifeline/cmd/kubectl-lifeline/internal/diagnose"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
	"github.com/lifeline-k8s/lifeline/pkg/workload"
)

// rolloutCmd is kubectl-kruise's rollout verbs for the kinds kubectl
// rollout does not know, with its flags where it has them.
func (o *options) rolloutCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "rollout", Short: "Manage the rollout of a CloneSet, Advanced StatefulSet or Advanced DaemonSet"}
	cmd.AddCommand(o.rolloutStatusCmd(), o.historyCmd(), o.undoCmd(), o.pauseCmd(true), o.pauseCmd(false), o.restartCmd())
	return cmd
}

// workloadVerb is a rollout verb's body: the resolved workload kind and
// name.
func (o *options) workloadVerb(body func(context.Context, *session, workload.Kind, string) error) func(*cobra.Command, []string) error {
	return o.run(func(ctx context.Context, s *session, args []string) error {
		t, err := s.resolve(args)
		if err != nil {
			return err
		}
		k, err := workloadKind(t)
		if err != nil {
			return err
		}
		return body(ctx, s, k, t.Name)
	})
}

func (o *options) rolloutStatusCmd() *cobra.Command {
	var watch bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "status (clone|asts|ads)/NAME",
		Short: "Wait for the rollout to finish, printing its progress (kubectl lifeline status says what holds it up)",
		Args:  cobra.RangeArgs(1, 2),
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", true, "wait until the rollout is done")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long (0: never)")
	cmd.RunE = o.workloadVerb(func(ctx context.Context, s *session, k workload.Kind, name string) error {
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		last := ""
		for {
			snap, err := s.readWorkload(ctx, k, name)
			if err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("timed out waiting for the rollout: %s", last)
				}
				return err
			}
			v := diagnose.Status(snap)
			line := "Waiting for " + v.Workload + " rollout to finish: " + v.Summary
			if v.Done {
				line = v.Summary
			}
			if line != last {
				fmt.Fprintln(s.printer.Out, line)
				last = line
			}
			if v.Done || !watch {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("timed out waiting for the rollout: %s (kubectl lifeline status %s says what holds it up)", v.Summary, v.Workload)
			case <-time.After(time.Second):
			}
		}
	})
	return cmd
}

// readRevisions reads the workload kind/name and its revisions.
func (s *session) readRevisions(ctx context.Context, k workload.Kind, name string) (workload.View, client.Object, []appsv1.ControllerRevision, error) {
	w, obj, err := s.readObject(ctx, k, name)
	if err != nil {
		return w, nil, nil, err
	}
	revs, err := s.revisions(ctx, w.UID)
	return w, obj, revs, err
}

// revisions lists the workload's ControllerRevisions, oldest first.
func (s *session) revisions(ctx context.Context, uid types.UID) ([]appsv1.ControllerRevision, error) {
	l := &appsv1.ControllerRevisionList{}
	if err := s.c.List(ctx, l, client.InNamespace(s.namespace)); err != nil {
		return nil, err
	}
	var out []appsv1.ControllerRevision
	for _, cr := range l.Items {
		if ref := metav1.GetControllerOf(&cr); ref != nil && ref.UID == uid {
			out = append(out, cr)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Revision < out[j].Revision })
	return out, nil
}

// templateOf is the pod template a revision stores, as
// {"spec":{"template":{"$patch":"replace",...}}}.
func templateOf(cr *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	var data struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(cr.Data.Raw, &data); err != nil {
		return nil, fmt.Errorf("revision %s: %w", cr.Name, err)
	}
	return &data.Spec.Template, nil
}

func (o *options) historyCmd() *cobra.Command {
	var revision int64
	cmd := &cobra.Command{
		Use:   "history (clone|asts|ads)/NAME",
		Short: "The workload's revisions, or one revision's pod template with --revision",
		Args:  cobra.RangeArgs(1, 2),
	}
	cmd.Flags().Int64Var(&revision, "revision", 0, "print the pod template of this revision")
	cmd.RunE = o.workloadVerb(func(ctx context.Context, s *session, k workload.Kind, name string) error {
		w, _, revs, err := s.readRevisions(ctx, k, name)
		if err != nil {
			return err
		}
		if revision > 0 {
			return s.printRevision(revs, revision, w)
		}
		if ok, err := s.printer.Structured(history(revs, w)); ok {
			return err
		}
		fmt.Fprintf(s.printer.Out, "%s\n", w.Ref())
		tw := tabwriter.NewWriter(s.printer.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "REVISION\tNAME\tIMAGES\tCHANGE-CAUSE\t")
		for _, h := range history(revs, w) {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", h.Revision, h.Name, strings.Join(h.Images, ","), orDash(h.ChangeCause), h.Role)
		}
		return tw.Flush()
	})
	return cmd
}

// revisionRow is one line of rollout history.
type revisionRow struct {
	Revision    int64    `json:"revision"`
	Name        string   `json:"name"`
	Images      []string `json:"images"`
	ChangeCause string   `json:"changeCause,omitempty"`
	// Role says whether the revision is the update or the current one.
	Role string `json:"role,omitempty"`
}

func history(revs []appsv1.ControllerRevision, w workload.View) []revisionRow {
	var out []revisionRow
	for i := range revs {
		cr := &revs[i]
		row := revisionRow{Revision: cr.Revision, Name: cr.Name, ChangeCause: cr.Annotations["kubernetes.io/change-cause"]}
		if t, err := templateOf(cr); err == nil {
			for _, c := range t.Spec.Containers {
				row.Images = append(row.Images, c.Image)
			}
		}
		switch {
		case sameRevision(cr.Name, w.Status.UpdateRevision):
			row.Role = "(update revision)"
		case sameRevision(cr.Name, w.Status.CurrentRevision):
			row.Role = "(current revision)"
		}
		out = append(out, row)
	}
	return out
}

func (s *session) printRevision(revs []appsv1.ControllerRevision, n int64, w workload.View) error {
	for i := range revs {
		if revs[i].Revision != n {
			continue
		}
		t, err := templateOf(&revs[i])
		if err != nil {
			return err
		}
		if ok, err := s.printer.Structured(t); ok {
			return err
		}
		b, err := yaml.Marshal(t)
		if err != nil {
			return err
		}
		fmt.Fprintf(s.printer.Out, "%s revision %d (%s):\n%s", w.Ref(), n, revs[i].Name, b)
		return nil
	}
	return fmt.Errorf("%s has no revision %d (kubectl lifeline rollout history %s lists them)", w.Ref(), n, w.Ref())
}

func (o *options) undoCmd() *cobra.Command {
	var to int64
	cmd := &cobra.Command{
		Use:   "undo (clone|asts|ads)/NAME",
		Short: "Roll the workload's pod template back to an earlier revision (the previous one by default)",
		Args:  cobra.RangeArgs(1, 2),
	}
	cmd.Flags().Int64Var(&to, "to-revision", 0, "the revision to roll back to (0: the one before the update revision)")
	cmd.RunE = o.workloadVerb(func(ctx context.Context, s *session, k workload.Kind, name string) error {
		w, obj, revs, err := s.readRevisions(ctx, k, name)
		if err != nil {
			return err
		}
		cr, err := rollbackTarget(revs, w, to)
		if err != nil {
			return err
		}
		t, err := templateOf(cr)
		if err != nil {
			return err
		}
		if equality.Semantic.DeepEqual(*w.Template, *t) {
			fmt.Fprintf(s.printer.Out, "%s skipped rollback (the template is already revision %d's)\n", w.Ref(), cr.Revision)
			return nil
		}
		// An update carries the resourceVersion read: a change made since
		// fails with a conflict rather than being overwritten.
		*w.Template = *t
		if err := s.c.Update(ctx, obj); err != nil {
			return err
		}
		fmt.Fprintf(s.printer.Out, "%s rolled back to revision %d (%s)\n", w.Ref(), cr.Revision, cr.Name)
		return nil
	})
	return cmd
}

// rollbackTarget is revision to, or with to 0 the newest revision before
// the update revision.
func rollbackTarget(revs []appsv1.ControllerRevision, w workload.View, to int64) (*appsv1.ControllerRevision, error) {
	if to > 0 {
		for i := range revs {
			if revs[i].Revision == to {
				return &revs[i], nil
			}
		}
		return nil, fmt.Errorf("%s has no revision %d (kubectl lifeline rollout history %s lists them)", w.Ref(), to, w.Ref())
	}
	for i := len(revs) - 1; i >= 0; i-- {
		if !sameRevision(revs[i].Name, w.Status.UpdateRevision) {
			return &revs[i], nil
		}
	}
	return nil, errors.New(w.Ref() + " has no earlier revision to roll back to")
}

func (o *options) pauseCmd(pause bool) *cobra.Command {
	verb, done := "resume", "resumed"
	short := "Resume a paused update"
	if pause {
		verb, done, short = "pause", "paused", "Pause the update: no more pods move to the update revision until resumed (scaling goes on)"
	}
	cmd := &cobra.Command{Use: verb + " (clone|asts|ads)/NAME", Short: short, Args: cobra.RangeArgs(1, 2)}
	cmd.RunE = o.workloadVerb(func(ctx context.Context, s *session, k workload.Kind, name string) error {
		w, obj, err := s.readObject(ctx, k, name)
		if err != nil {
			return err
		}
		if w.Paused == pause {
			fmt.Fprintf(s.printer.Out, "%s is already %s\n", w.Ref(), done)
			return nil
		}
		patch := nested(k.PausedPath, pause)
		if err := s.c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return err
		}
		fmt.Fprintf(s.printer.Out, "%s %s\n", w.Ref(), done)
		return nil
	})
	return cmd
}

func (o *options) restartCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "restart (clone|asts|ads)/NAME",
		Short: "Roll every pod again, as kubectl rollout restart does: the template gets a kubectl.kubernetes.io/restartedAt annotation",
		Args:  cobra.RangeArgs(1, 2),
	}
	cmd.RunE = o.workloadVerb(func(ctx context.Context, s *session, k workload.Kind, name string) error {
		w, obj, err := s.readObject(ctx, k, name)
		if err != nil {
			return err
		}
		at := s.now().UTC().Format(time.RFC3339)
		patch := nested([]string{"spec", "template", "metadata", "annotations", "kubectl.kubernetes.io/restartedAt"}, at)
		if err := s.c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return err
		}
		fmt.Fprintf(s.printer.Out, "%s restarted\n", w.Ref())
		if strings.Contains(w.Strategy, "InPlace") {
			fmt.Fprintln(s.printer.Out, "note: its update policy is "+w.Strategy+": a template annotation is applied in place, without restarting containers, as in OpenKruise")
		}
		return nil
	})
	return cmd
}

// nested is the merge patch that sets path to v.
func nested(path []string, v any) []byte {
	for i := len(path) - 1; i >= 0; i-- {
		v = map[string]any{path[i]: v}
	}
	b, _ := json.Marshal(v)
	return b
}

// sameRevision compares revisions by their short hash: an Advanced
// DaemonSet's status names its update revision by the hash alone.
func sameRevision(name, status string) bool {
	return status != "" && podfacts.ShortHash(name) == podfacts.ShortHash(status)
}

func orDash(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
