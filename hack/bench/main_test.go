package main

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestPickScenarios(t *testing.T) {
	all := allScenarios()
	names := func(ss []scenario) []string {
		var out []string
		for _, s := range ss {
			out = append(out, s.name)
		}
		return out
	}
	got, err := pick(all, "all")
	if err != nil || len(got) != len(all) {
		t.Fatalf("all: %d scenarios, %v; want %d", len(got), err, len(all))
	}
	got, err = pick(all, "realistic-*, deployment")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"deployment", "realistic-deployment", "realistic-statefulset", "realistic-cloneset", "realistic-cloneset-inplace",
		"realistic-deployment-narrow", "realistic-cloneset-narrow", "realistic-cloneset-inplace-narrow", "realistic-openkruise-cloneset", "realistic-openkruise-cloneset-inplace",
		"realistic-openkruise-cloneset-narrow", "realistic-openkruise-cloneset-inplace-narrow"}
	if !slices.Equal(names(got), want) {
		t.Errorf("realistic-*, deployment: %v, want %v (in run order)", names(got), want)
	}
	if _, err := pick(all, "clonset"); err == nil {
		t.Error("a pattern that matches nothing was accepted")
	}
	// Phases run in order, so a scenario never finds the cluster in a
	// later phase's state.
	for i := 1; i < len(all); i++ {
		if slices.Index(phases, all[i].phase) < slices.Index(phases, all[i-1].phase) {
			t.Errorf("%s (%s) runs after %s (%s)", all[i].name, all[i].phase, all[i-1].name, all[i-1].phase)
		}
	}
}

// A scenario whose namespace is slow to go keeps its figures and the run
// goes on, the report saying so; any other failure stops the run.
func TestANamespaceSlowToGoDoesNotStopTheRun(t *testing.T) {
	var ran []string
	step := func(name string, err error) scenario {
		return scenario{name: name, phase: lifelineInstant, run: func(context.Context, *bench) error {
			ran = append(ran, name)
			return err
		}}
	}
	b := &bench{}
	slow := &lingering{ns: "bench-1", err: context.DeadlineExceeded}
	err := runOn(context.Background(), b, options{}, []scenario{step("first", slow), step("second", nil), step("third", errors.New("broken")), step("fourth", nil)})
	if want := []string{"first", "second", "third"}; !slices.Equal(ran, want) {
		t.Errorf("ran %v, want %v", ran, want)
	}
	if err == nil || !strings.Contains(err.Error(), "third: broken") {
		t.Errorf("the run returned %v, want the third scenario's failure", err)
	}
	if len(b.report.Notes) != 1 || !strings.Contains(b.report.Notes[0], "first: namespace bench-1 not gone after the measurement") {
		t.Errorf("notes %q, want the first scenario's namespace", b.report.Notes)
	}
}
