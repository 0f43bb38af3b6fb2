// Package cli is kubectl-lifeline's commands: kubectl's flags and resource
// arguments, reads of a snapshot, and the views of package diagnose.
package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
	"github.com/lifeline-k8s/lifeline/cmd/kubectl-lifeline/internal/render"
)

// options are the flags every command shares.
type options struct {
	flags   *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
	output  string
	color   string
	// now is the clock; tests fix it.
	now func() time.Time
}

// session is what a command works with once the flags are read.
type session struct {
	c         client.Client
	cs        kubernetes.Interface
	mapper    meta.RESTMapper
	namespace string
	printer   render.Printer
	now       func() time.Time
}

// New is the root command, kubectl lifeline.
func New(streams genericiooptions.IOStreams) *cobra.Command {
	o := &options{flags: genericclioptions.NewConfigFlags(true), streams: streams, now: time.Now}
	root := &cobra.Command{
		Use:   "kubectl-lifeline",
		Short: "See and steer Lifeline's workloads: why a rollout is stuck, a pod's life, a budget's numbers",
		Long: `kubectl lifeline explains what Lifeline (and OpenKruise v1.9) workloads do.

  kubectl lifeline status clone/web [--watch]     progress, pods by lifecycle state, what holds the rollout up
  kubectl lifeline explain pod/web-x7k2p          a pod's timeline, its budget, placement and hook operators
  kubectl lifeline budget pub/web                 a PodUnavailableBudget's numbers, pods and recorded disruptions
  kubectl lifeline rollout status|history|undo|pause|resume|restart clone/web

Resources: clone (CloneSet), asts (Advanced StatefulSet), ads (Advanced DaemonSet), pod, pub.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	o.flags.AddFlags(root.PersistentFlags())
	root.PersistentFlags().StringVarP(&o.output, "output", "o", "", "output format: json or yaml (default: text)")
	root.PersistentFlags().StringVar(&o.color, "color", "auto", "colour the text: auto (on a terminal, unless NO_COLOR is set), always or never")
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.AddCommand(o.statusCmd(), o.explainCmd(), o.budgetCmd(), o.rolloutCmd())
	return root
}

// open reads the flags into a session.
func (o *options) open() (*session, error) {
	cfg, err := o.flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	mapper, err := o.flags.ToRESTMapper()
	if err != nil {
		return nil, err
	}
	ns, _, err := o.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme(), Mapper: mapper})
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if o.output != "" && o.output != "json" && o.output != "yaml" {
		return nil, fmt.Errorf("--output %q: use json or yaml, or leave it out for text", o.output)
	}
	p := render.Printer{Out: o.streams.Out, Format: o.output, Color: render.UseColor(o.color, o.streams.Out)}
	return &session{c: c, cs: cs, mapper: mapper, namespace: ns, printer: p, now: o.now}, nil
}

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, appsv1beta1.AddToScheme, policyv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// run wraps a command's body with a session and a context that ends with
// the command.
func (o *options) run(body func(context.Context, *session, []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		s, err := o.open()
		if err != nil {
			return err
		}
		return body(cmd.Context(), s, args)
	}
}
