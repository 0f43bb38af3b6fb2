package cluster

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Value finds the first series carrying every asked label; 0 for none, -1
// when the endpoint cannot be read.
func TestScraperValue(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "# TYPE c counter\nc{kind=\"a\",result=\"ok\"} 3\nc{kind=\"b\"} 5\n# TYPE g gauge\ng 7\n")
	}))
	defer srv.Close()
	s := &Scraper{client: srv.Client()}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"c", map[string]string{"kind": "b"}, 5},
		{"c", map[string]string{"kind": "a", "result": "ok"}, 3},
		{"c", map[string]string{"result": "failed"}, 0},
		{"c", map[string]string{"other": ""}, 3}, // an absent label reads as ""
		{"g", nil, 7},
		{"missing", nil, 0},
	} {
		if got := s.Value(srv.URL, c.name, c.labels); got != c.want {
			t.Errorf("Value(%s, %v) = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if got := s.Value("http://127.0.0.1:1/none", "c", nil); got != -1 {
		t.Errorf("unreadable: %v, want -1", got)
	}
}
