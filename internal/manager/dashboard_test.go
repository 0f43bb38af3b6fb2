package manager

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	// The metrics of the bridge, of hook operators on the SDK and of the
	// lease fence, which this package does not import.
	_ "github.com/lifeline-k8s/lifeline/internal/bridge"
	_ "github.com/lifeline-k8s/lifeline/internal/leasefence"
	_ "github.com/lifeline-k8s/lifeline/pkg/hook"
)

var (
	descPattern   = regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
	metricPattern = regexp.MustCompile(`\b(?:lifeline|controller_runtime|workqueue)_[a-z_]+`)
	// Label names a query groups, matches or ignores by, and a legend names.
	labelPatterns = []*regexp.Regexp{
		regexp.MustCompile(`(?:by|ignoring|on) \(([^)]*)\)`),
		regexp.MustCompile(`[{,]\s*([a-z_]+)\s*=~?`),
		regexp.MustCompile(`\{\{\s*([a-z_]+)\s*\}\}`),
	}
)

// registered maps every metric the processes register with
// controller-runtime's registry (the manager's features, controller-runtime
// itself, the bridge, the SDK) to its label names.
func registered() map[string][]string {
	ch := make(chan *prometheus.Desc)
	go func() {
		metrics.Registry.(prometheus.Collector).Describe(ch)
		close(ch)
	}()
	out := map[string][]string{}
	for d := range ch {
		m := descPattern.FindStringSubmatch(d.String())
		if m == nil {
			continue
		}
		var labels []string
		for _, l := range strings.Split(m[2], ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
		out[m[1]] = labels
	}
	return out
}

// TestGrafanaDashboardQueriesRealMetrics: every query of the Grafana
// dashboard (config/grafana/lifeline.json) names metrics the processes
// register, and only labels those metrics carry, so no panel stays empty
// because of a typo or a renamed metric.
func TestGrafanaDashboardQueriesRealMetrics(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "grafana", "lifeline.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr, LegendFormat string }
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	known := registered()
	queries := 0
	for _, p := range dash.Panels {
		for _, q := range p.Targets {
			queries++
			labels := []string{"le"}
			for _, name := range metricPattern.FindAllString(q.Expr, -1) {
				base := name
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if _, ok := known[base]; !ok {
						base = strings.TrimSuffix(base, suffix)
					}
				}
				l, ok := known[base]
				if !ok {
					t.Errorf("panel %q: %s is not a registered metric", p.Title, name)
				}
				labels = append(labels, l...)
			}
			for _, re := range labelPatterns {
				for _, m := range re.FindAllStringSubmatch(q.Expr+" "+q.LegendFormat, -1) {
					for _, l := range strings.Split(m[1], ",") {
						if l = strings.TrimSpace(l); l != "" && !slices.Contains(labels, l) {
							t.Errorf("panel %q: label %q is not one of its metrics' (%v): %s", p.Title, l, labels, q.Expr)
						}
					}
				}
			}
		}
	}
	if queries < 15 {
		t.Errorf("%d queries: the dashboard lost its panels", queries)
	}
}
