package webhookauth

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
)

type okHandler struct{ calls int }

func (h *okHandler) ServeHTTP(w http.ResponseWriter, _ *http.Request) { h.calls++ }

func request(path, cn string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{"request":{"uid":"u1"}}`))
	if cn != "" {
		r.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{Subject: pkix.Name{CommonName: cn}}}}}
	}
	return r
}

// With a client CA, admission paths take only a verified certificate of
// one of the names; the open path (conversion) takes any caller.
func TestGuardRequiresTheAPIServersCertificate(t *testing.T) {
	s := New(nil, Options{ClientCA: "ca.pem", ClientNames: []string{"kube-apiserver-webhook-client"}, Open: []string{"/convert"}, PerSecond: 100, Burst: 100})
	for _, c := range []struct {
		path, cn string
		want     int
	}{
		{"/validate-pod", "", http.StatusForbidden},
		{"/validate-pod", "lifeline-admin", http.StatusForbidden},
		{"/validate-pod", "kube-apiserver-webhook-client", http.StatusOK},
		{"/convert", "", http.StatusOK},
	} {
		h := &okHandler{}
		rec := httptest.NewRecorder()
		s.Guard(c.path, h).ServeHTTP(rec, request(c.path, c.cn))
		if rec.Code != c.want || (c.want == http.StatusOK) != (h.calls == 1) {
			t.Errorf("%s as %q: %d, handler called %d times; want %d", c.path, c.cn, rec.Code, h.calls, c.want)
		}
	}
}

// A source past its burst is answered an AdmissionReview 429 with the
// request's UID, which the API server passes on as retry-later; another
// source is not held back.
func TestGuardLimitsEachSource(t *testing.T) {
	s := New(nil, Options{Limited: []string{"/validate-pod"}, PerSecond: 0.001, Burst: 3})
	h := &okHandler{}
	var last *httptest.ResponseRecorder
	for range 5 {
		last = httptest.NewRecorder()
		s.Guard("/validate-pod", h).ServeHTTP(last, request("/validate-pod", ""))
	}
	out := admissionv1.AdmissionReview{}
	if err := json.Unmarshal(last.Body.Bytes(), &out); err != nil || out.Response == nil || out.Response.Allowed ||
		out.Response.Result.Code != http.StatusTooManyRequests || out.Response.UID != "u1" {
		t.Fatalf("past the burst: %s (%v), want an AdmissionReview refusing with 429 for u1", last.Body.String(), err)
	}
	if h.calls != 3 {
		t.Errorf("handler called %d times, want the burst of 3", h.calls)
	}
	other := request("/validate-pod", "")
	other.RemoteAddr = "10.0.0.9:1234"
	s.Guard("/validate-pod", h).ServeHTTP(httptest.NewRecorder(), other)
	if h.calls != 4 {
		t.Error("another source was held back")
	}
}

// A steady source keeps its spent bucket however many other sources come
// and go: spraying requests from fresh addresses does not refill it.
func TestGuardKeepsASteadySourcesBucket(t *testing.T) {
	s := New(nil, Options{Limited: []string{"/validate-pod"}, PerSecond: 0.001, Burst: 2})
	h := &okHandler{}
	send := func(addr string) bool { // whether the handler was called
		r := request("/validate-pod", "")
		r.RemoteAddr = addr
		before := h.calls
		s.Guard("/validate-pod", h).ServeHTTP(httptest.NewRecorder(), r)
		return h.calls > before
	}
	admitted := 0
	steady := func() {
		if send("10.0.0.1:1000") {
			admitted++
		}
	}
	for i := range 3 * maxSources {
		send(fmt.Sprintf("10.1.%d.%d:1000", i/250, i%250))
		if i%50 == 0 {
			steady() // seen now and then, so kept
		}
	}
	if admitted != 2 {
		t.Errorf("the steady source was admitted %d times, want its burst of 2: it got fresh buckets while others came and went", admitted)
	}
}

// Bodies are capped.
func TestGuardCapsTheBody(t *testing.T) {
	s := New(nil, Options{MaxBody: 10})
	var err error
	h := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, err = r.Body.Read(make([]byte, 100))
		_, err = r.Body.Read(make([]byte, 100))
	})
	s.Guard("/convert", h).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/convert", strings.NewReader(strings.Repeat("x", 50))))
	if err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("reading 50 bytes under a cap of 10: %v, want too large", err)
	}
}
