// Package bridge keeps a service registry in step with the pods of
// CloneSets and Advanced StatefulSets: it is
// a hook operator (pkg/hook) whose handlers register a pod before it
// counts as available and unregister it before it is updated or deleted,
// and a reconciler that, on start and then periodically, removes from the
// registry only the entries of its own whose pods are really gone.
package bridge

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/lifeline-k8s/lifeline/pkg/hook"
)

// Config is the bridge's configuration file.
type Config struct {
	// Name names the bridge as a hook operator: the pod annotation and
	// condition hook.lifeline.dev/<name>, events and metrics. Default
	// "registry".
	Name string `json:"name,omitempty"`
	// CloneSets selects by label the CloneSets whose pods are registered;
	// empty selects all. Used when Workloads is empty.
	CloneSets *metav1.LabelSelector `json:"cloneSets,omitempty"`
	// Workloads names the workloads whose pods are registered, by kind
	// and label, instead of CloneSets.
	Workloads []WorkloadSelector `json:"workloads,omitempty"`
	// Namespace limits the bridge to one namespace; empty for all.
	Namespace string `json:"namespace,omitempty"`
	// Port is the port registered for each instance; PortName, instead,
	// names the container port to register.
	Port     int32  `json:"port,omitempty"`
	PortName string `json:"portName,omitempty"`
	// Timeout flags a pod whose registration or unregistration keeps
	// failing this long (event and pod condition); its hook stays held.
	Timeout metav1.Duration `json:"timeout,omitempty"`
	// Resync is how often the registry is reconciled with the pods, to
	// drop entries of pods deleted without a preDelete hook (evictions,
	// lost nodes). Default 30s.
	Resync metav1.Duration `json:"resync,omitempty"`
	// Exactly one backend.
	Etcd *EtcdConfig `json:"etcd,omitempty"`
	HTTP *HTTPConfig `json:"http,omitempty"`
}

// WorkloadSelector selects the workloads of a kind: CloneSet or
// StatefulSet (both apps.kruise.io; the StatefulSet is the Advanced one).
type WorkloadSelector struct {
	Kind string `json:"kind"`
	// Selector selects by label; empty selects every one of the kind.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// EtcdConfig is the etcd registry: one key per instance,
// <prefix>/<namespace>/<cloneset>/<pod>, attached to a lease the bridge
// keeps alive, so a dead bridge's entries expire.
type EtcdConfig struct {
	Endpoints []string `json:"endpoints"`
	// Prefix of the instance keys (default /services).
	Prefix string `json:"prefix,omitempty"`
	// TTL of the lease (default 30s).
	TTL metav1.Duration `json:"ttl,omitempty"`
	// DialTimeout bounds connecting (default 5s); RequestTimeout one
	// request (default 5s).
	DialTimeout    metav1.Duration `json:"dialTimeout,omitempty"`
	RequestTimeout metav1.Duration `json:"requestTimeout,omitempty"`
	// LeaseKey is where the bridge keeps its lease's id, so a restarted
	// bridge keeps its entries instead of registering them again (default
	// /lifeline-bridge/<name>/lease, outside the prefix).
	LeaseKey string `json:"leaseKey,omitempty"`
	// TLS, for https:// endpoints: the CA that signs etcd's serving
	// certificate (the system's roots when empty) and, for etcd's
	// --client-cert-auth, the bridge's client certificate and key.
	TLS *EtcdTLS `json:"tls,omitempty"`
	// UsernameFile and PasswordFile hold the user etcd's authentication
	// knows the bridge as: files (a mounted Secret), never the
	// configuration itself, which is a ConfigMap.
	UsernameFile string `json:"usernameFile,omitempty"`
	PasswordFile string `json:"passwordFile,omitempty"`
}

// EtcdTLS names the files of etcd's TLS; all are PEM.
type EtcdTLS struct {
	CAFile     string `json:"caFile,omitempty"`
	CertFile   string `json:"certFile,omitempty"`
	KeyFile    string `json:"keyFile,omitempty"`
	ServerName string `json:"serverName,omitempty"`
}

// LoadConfig reads, defaults and validates a configuration file. It
// reports every invalid field at once, with its path.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c := &Config{}
	if err := yaml.UnmarshalStrict(data, c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.Default()
	if errs := c.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", path, errs.ToAggregate())
	}
	return c, nil
}

// Default fills in the defaults.
func (c *Config) Default() {
	if c.Name == "" {
		c.Name = "registry"
	}
	if c.Resync.Duration == 0 {
		c.Resync.Duration = 30 * time.Second
	}
	if e := c.Etcd; e != nil {
		if e.Prefix == "" {
			e.Prefix = "/services"
		}
		e.Prefix = "/" + strings.Trim(e.Prefix, "/")
		if e.TTL.Duration == 0 {
			e.TTL.Duration = 30 * time.Second
		}
		if e.DialTimeout.Duration == 0 {
			e.DialTimeout.Duration = 5 * time.Second
		}
		if e.RequestTimeout.Duration == 0 {
			e.RequestTimeout.Duration = 5 * time.Second
		}
		if e.LeaseKey == "" {
			e.LeaseKey = "/lifeline-bridge/" + c.Name + "/lease"
		}
	}
	if h := c.HTTP; h != nil {
		h.defaults()
		h.Bridge = c.Name
	}
}

// Validate returns every invalid field.
func (c *Config) Validate() field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(c.Name) {
		errs = append(errs, field.Invalid(field.NewPath("name"), c.Name, msg))
	}
	if c.CloneSets != nil {
		if _, err := metav1.LabelSelectorAsSelector(c.CloneSets); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("cloneSets"), c.CloneSets, err.Error()))
		}
	}
	errs = append(errs, c.validateWorkloads()...)
	switch {
	case c.Port == 0 && c.PortName == "":
		errs = append(errs, field.Required(field.NewPath("port"), "set port or portName"))
	case c.Port != 0 && c.PortName != "":
		errs = append(errs, field.Invalid(field.NewPath("portName"), c.PortName, "set port or portName, not both"))
	case c.Port < 0 || c.Port > 65535:
		errs = append(errs, field.Invalid(field.NewPath("port"), c.Port, "must be between 1 and 65535"))
	}
	if c.Resync.Duration < 0 {
		errs = append(errs, field.Invalid(field.NewPath("resync"), c.Resync.Duration.String(), "must not be negative"))
	}
	switch {
	case c.Etcd == nil && c.HTTP == nil:
		errs = append(errs, field.Required(field.NewPath("etcd"), "set one backend: etcd or http"))
	case c.Etcd != nil && c.HTTP != nil:
		errs = append(errs, field.Forbidden(field.NewPath("http"), "set one backend: etcd or http, not both"))
	}
	if e := c.Etcd; e != nil {
		p := field.NewPath("etcd")
		if len(e.Endpoints) == 0 {
			errs = append(errs, field.Required(p.Child("endpoints"), "at least one endpoint"))
		}
		if e.TTL.Duration < 5*time.Second {
			errs = append(errs, field.Invalid(p.Child("ttl"), e.TTL.Duration.String(), "must be at least 5s"))
		}
		if strings.HasPrefix(e.LeaseKey+"/", e.Prefix+"/") {
			errs = append(errs, field.Invalid(p.Child("leaseKey"), e.LeaseKey, "must not be under the prefix, where it would read as an instance"))
		}
		errs = append(errs, e.validateSecurity(p)...)
	}
	if h := c.HTTP; h != nil {
		errs = append(errs, h.validate(field.NewPath("http"))...)
	}
	return errs
}

func (c *Config) validateWorkloads() field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("workloads")
	if len(c.Workloads) > 0 && c.CloneSets != nil {
		errs = append(errs, field.Forbidden(field.NewPath("cloneSets"), "set cloneSets or workloads, not both: put the CloneSet selector in workloads"))
	}
	seen := map[string]bool{}
	var kinds []string
	for _, k := range hook.Kinds() {
		kinds = append(kinds, string(k))
	}
	for i, w := range c.Workloads {
		switch {
		case w.Kind == "":
			errs = append(errs, field.Required(p.Index(i).Child("kind"), strings.Join(kinds, ", ")))
		case !slices.Contains(kinds, w.Kind):
			errs = append(errs, field.NotSupported(p.Index(i).Child("kind"), w.Kind, kinds))
		case seen[w.Kind]:
			errs = append(errs, field.Duplicate(p.Index(i).Child("kind"), w.Kind))
		}
		seen[w.Kind] = true
		if w.Selector != nil {
			if _, err := metav1.LabelSelectorAsSelector(w.Selector); err != nil {
				errs = append(errs, field.Invalid(p.Index(i).Child("selector"), w.Selector, err.Error()))
			}
		}
	}
	return errs
}

// Follow names the workloads the bridge follows, for the hook SDK.
func (c *Config) Follow() []hook.Follow {
	if len(c.Workloads) == 0 {
		return []hook.Follow{{Kind: hook.KindCloneSet, Selector: selector(c.CloneSets)}}
	}
	out := make([]hook.Follow, 0, len(c.Workloads))
	for _, w := range c.Workloads {
		out = append(out, hook.Follow{Kind: hook.Kind(w.Kind), Selector: selector(w.Selector)})
	}
	return out
}

// selector is s as a labels.Selector, nil for none or an invalid one
// (Validate reports those).
func selector(s *metav1.LabelSelector) labels.Selector {
	if s == nil {
		return nil
	}
	out, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return nil
	}
	return out
}
