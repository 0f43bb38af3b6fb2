package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// HTTPConfig is a registry spoken to over HTTP (Consul, Nacos, Eureka, ...):
// templated register and unregister requests, and optionally a list
// request through which the reconcile finds the bridge's own entries.
//
// Templates are Go text/template over the instance: .ID (namespace/
// workload/pod), .IP, .Port, .Pod, .Namespace, .Workload (the name of the
// pod's CloneSet or Advanced StatefulSet; .CloneSet is the same), .Node,
// .Revision, .Labels, .UID and .Bridge (the bridge's name); an unregister
// request knows only .ID, .Namespace, .Workload, .Pod and .Bridge. The
// functions pathEscape, queryEscape and json escape values.
type HTTPConfig struct {
	Register   HTTPRequest `json:"register"`
	Unregister HTTPRequest `json:"unregister"`
	// List, if set, lists the registry's entries; without it the bridge
	// cannot remove entries of pods deleted without a preDelete hook, nor
	// restore entries the registry lost.
	List *HTTPList `json:"list,omitempty"`
	// Timeout bounds one attempt (default 5s); Retries is how many more
	// attempts a failed request gets, with backoff, before the handler
	// fails and the hook stays held (default 2).
	Timeout metav1.Duration `json:"timeout,omitempty"`
	Retries *int32          `json:"retries,omitempty"`
	// Bridge is the bridge's name, for templates; set from the config.
	Bridge string `json:"-"`
}

// HTTPRequest is one templated request. A 2xx answer is success; for
// unregister, so is 404.
type HTTPRequest struct {
	Method  string            `json:"method,omitempty"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	// HeadersFromFiles sets headers to the content of files (a mounted
	// Secret: a registry's token never sits in the configuration, which
	// is a ConfigMap), read at each request, so a rotated one is used.
	HeadersFromFiles map[string]string `json:"headersFromFiles,omitempty"`
	Body             string            `json:"body,omitempty"`
}

// HTTPList is the request that lists the registry's entries, and how to
// read the answer: a JSON object (an entry per member) or array, whose
// entries carry, at the dotted paths given, the bridge's name (an entry
// with another is not the bridge's), the instance id and the pod's UID,
// all of which the register body must therefore write (as Consul's Meta,
// for instance).
type HTTPList struct {
	HTTPRequest `json:",inline"`
	BridgeField string `json:"bridgeField"`
	IDField     string `json:"idField"`
	UIDField    string `json:"uidField,omitempty"`
	// IPField and PortField, if set, say where an entry holds its address,
	// so an entry at an address its pod no longer has is corrected.
	IPField   string `json:"ipField,omitempty"`
	PortField string `json:"portField,omitempty"`
}

func (h *HTTPConfig) defaults() {
	if h.Timeout.Duration == 0 {
		h.Timeout.Duration = 5 * time.Second
	}
	if h.Retries == nil {
		two := int32(2)
		h.Retries = &two
	}
	for _, r := range []*HTTPRequest{&h.Register, &h.Unregister} {
		if r.Method == "" {
			r.Method = http.MethodPut
		}
	}
	if h.List != nil && h.List.Method == "" {
		h.List.Method = http.MethodGet
	}
}

func (h *HTTPConfig) validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	check := func(p *field.Path, r HTTPRequest) {
		if r.URL == "" {
			errs = append(errs, field.Required(p.Child("url"), ""))
		}
		for _, name := range []string{"url", "body"} {
			text := map[string]string{"url": r.URL, "body": r.Body}[name]
			if err := checkTemplate(text); err != nil {
				errs = append(errs, field.Invalid(p.Child(name), text, err.Error()))
			}
		}
		for _, k := range slices.Sorted(maps.Keys(r.Headers)) {
			if err := checkTemplate(r.Headers[k]); err != nil {
				errs = append(errs, field.Invalid(p.Child("headers").Key(k), r.Headers[k], err.Error()))
			}
		}
		for _, k := range slices.Sorted(maps.Keys(r.HeadersFromFiles)) {
			if _, err := os.ReadFile(r.HeadersFromFiles[k]); err != nil {
				errs = append(errs, field.Invalid(p.Child("headersFromFiles").Key(k), r.HeadersFromFiles[k], err.Error()))
			}
			if _, both := r.Headers[k]; both {
				errs = append(errs, field.Duplicate(p.Child("headersFromFiles").Key(k), "also in headers"))
			}
		}
	}
	check(p.Child("register"), h.Register)
	check(p.Child("unregister"), h.Unregister)
	if l := h.List; l != nil {
		check(p.Child("list"), l.HTTPRequest)
		if l.BridgeField == "" {
			errs = append(errs, field.Required(p.Child("list", "bridgeField"), "the list must tell the bridge's entries from others"))
		}
		if l.IDField == "" {
			errs = append(errs, field.Required(p.Child("list", "idField"), ""))
		}
	}
	if h.Timeout.Duration <= 0 {
		errs = append(errs, field.Invalid(p.Child("timeout"), h.Timeout.Duration.String(), "must be positive"))
	}
	if h.Retries != nil && *h.Retries < 0 {
		errs = append(errs, field.Invalid(p.Child("retries"), *h.Retries, "must not be negative"))
	}
	return errs
}

// checkTemplate parses a template and renders it for a sample instance, so
// a field name that does not exist fails here rather than at the first
// call.
func checkTemplate(text string) error {
	t, err := parseTemplate(text)
	if err != nil {
		return err
	}
	sample := Instance{IP: "10.0.0.1", Port: 80, Pod: "p", Namespace: "ns", Workload: "cs", Labels: map[string]string{}}
	return t.Execute(io.Discard, templateData{Instance: sample, ID: sample.ID(), Bridge: "b"})
}

func parseTemplate(text string) (*template.Template, error) {
	return template.New("").Option("missingkey=error").Funcs(template.FuncMap{
		"pathEscape": url.PathEscape, "queryEscape": url.QueryEscape,
		"json": func(v any) (string, error) { b, err := json.Marshal(v); return string(b), err },
	}).Parse(text)
}

// HTTP is the HTTP registry.
type HTTP struct {
	cfg    HTTPConfig
	client *http.Client
}

// NewHTTP returns the HTTP registry of cfg.
func NewHTTP(cfg HTTPConfig) (*HTTP, error) {
	return &HTTP{cfg: cfg, client: &http.Client{Timeout: cfg.Timeout.Duration}}, nil
}

// Check makes sure the registry answers: the list request when there is
// one, else a connection to the register URL's host. Its error names the
// field whose address failed.
func (h *HTTP) Check(ctx context.Context) error {
	if h.cfg.List != nil {
		if _, err := h.Entries(ctx); err != nil {
			return fmt.Errorf("http.list.url: cannot use the registry: %w", err)
		}
		return nil
	}
	u, err := url.Parse(strings.SplitN(h.cfg.Register.URL, "{{", 2)[0])
	if err != nil || u.Host == "" {
		return nil // a host that only the template gives; the first call tells
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	conn, err := (&net.Dialer{Timeout: h.cfg.Timeout.Duration}).DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return fmt.Errorf("http.register.url: cannot reach the registry: %w", err)
	}
	return conn.Close()
}

// templateData is what the templates see of an instance.
type templateData struct {
	Instance
	ID     string
	Bridge string
	// CloneSet is .Workload under its name of before the bridge followed
	// other kinds, so templates written then keep working.
	CloneSet string
}

func (h *HTTP) data(inst Instance) templateData {
	return templateData{Instance: inst, ID: inst.ID(), Bridge: h.cfg.Bridge, CloneSet: inst.Workload}
}

// Register sends the register request.
func (h *HTTP) Register(ctx context.Context, inst Instance) error {
	_, err := h.do(ctx, h.cfg.Register, h.data(inst), false)
	return err
}

// Unregister sends the unregister request; a 404 is success.
func (h *HTTP) Unregister(ctx context.Context, id string) error {
	ns, cs, pod, ok := splitID(id)
	if !ok {
		return fmt.Errorf("malformed instance id %q", id)
	}
	_, err := h.do(ctx, h.cfg.Unregister, h.data(Instance{Namespace: ns, Workload: cs, Pod: pod}), true)
	return err
}

// Entries lists the bridge's entries through the list request; with no
// list request configured it knows of none.
func (h *HTTP) Entries(ctx context.Context) ([]Entry, error) {
	l := h.cfg.List
	if l == nil {
		return nil, nil
	}
	body, err := h.do(ctx, l.HTTPRequest, templateData{Bridge: h.cfg.Bridge}, false)
	if err != nil {
		return nil, err
	}
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("reading the list answer: %w", err)
	}
	var items []any
	switch d := doc.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(d)) {
			items = append(items, d[k])
		}
	case []any:
		items = d
	default:
		return nil, fmt.Errorf("the list answer is neither a JSON object nor an array")
	}
	var out []Entry
	for _, item := range items {
		if lookup(item, l.BridgeField) != h.cfg.Bridge {
			continue
		}
		if id := lookup(item, l.IDField); id != "" {
			port, _ := strconv.ParseInt(lookup(item, l.PortField), 10, 32)
			out = append(out, Entry{ID: id, UID: lookup(item, l.UIDField), IP: lookup(item, l.IPField), Port: int32(port)})
		}
	}
	return out, nil
}

// RemoveIfUnchanged unregisters the entry if a fresh list still shows it
// for the same pod UID. An HTTP registry has no conditional delete: the
// bridge's per-instance lock, held meanwhile, keeps its own handlers out.
func (h *HTTP) RemoveIfUnchanged(ctx context.Context, e Entry) error {
	current, found, err := h.find(ctx, e.ID)
	if err != nil || !found || current.UID != e.UID {
		return err
	}
	return h.Unregister(ctx, e.ID)
}

// RegisterIfAbsent registers the instance if a fresh list does not show
// it.
func (h *HTTP) RegisterIfAbsent(ctx context.Context, inst Instance) error {
	if h.cfg.List == nil {
		return nil
	}
	if _, found, err := h.find(ctx, inst.ID()); err != nil || found {
		return err
	}
	return h.Register(ctx, inst)
}

func (h *HTTP) find(ctx context.Context, id string) (Entry, bool, error) {
	entries, err := h.Entries(ctx)
	if err != nil {
		return Entry{}, false, err
	}
	for _, e := range entries {
		if e.ID == id {
			return e, true, nil
		}
	}
	return Entry{}, false, nil
}

// do renders and sends one request, retrying failures with backoff, and
// returns the answer's body.
func (h *HTTP) do(ctx context.Context, r HTTPRequest, data templateData, notFoundOK bool) ([]byte, error) {
	render := func(text string) (string, error) {
		t, err := parseTemplate(text)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		err = t.Execute(&b, data)
		return b.String(), err
	}
	u, err := render(r.URL)
	if err != nil {
		return nil, err
	}
	body, err := render(r.Body)
	if err != nil {
		return nil, err
	}
	headers := map[string]string{}
	for k, v := range r.Headers {
		if headers[k], err = render(v); err != nil {
			return nil, err
		}
	}
	for k, path := range r.HeadersFromFiles {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", k, err)
		}
		headers[k] = strings.TrimSpace(string(b))
	}
	var last error
	for attempt := 0; attempt <= int(*h.cfg.Retries); attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
			}
		}
		var out []byte
		if out, last = h.send(ctx, r.Method, u, headers, body, notFoundOK); last == nil {
			return out, nil
		}
	}
	return nil, last
}

func (h *HTTP) send(ctx context.Context, method, u string, headers map[string]string, body string, notFoundOK bool) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader([]byte(body)))
	if err != nil {
		return nil, err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 || (notFoundOK && resp.StatusCode == http.StatusNotFound) {
		return out, nil
	}
	return nil, fmt.Errorf("%s %s: %s: %s", method, u, resp.Status, strings.TrimSpace(string(out)))
}

// lookup follows a dotted path into a decoded JSON value and returns the
// string, or the number as a string, there, or "".
func lookup(v any, path string) string {
	if path == "" {
		return ""
	}
	for _, part := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[part]
	}
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return ""
}
