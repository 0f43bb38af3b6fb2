// Package render prints the plugin's views: text for people (colour only
// on a terminal), JSON or YAML for scripts.
package render

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
	"sigs.k8s.io/yaml"
)

// Printer prints views in one output format.
type Printer struct {
	Out    io.Writer
	Format string // "" (text), json or yaml
	Color  bool
}

// Formats are the values -o takes.
var Formats = []string{"json", "yaml"}

// UseColor decides colour as kubectl users expect: only on a terminal,
// never with NO_COLOR set; mode always or never overrides.
func UseColor(mode string, out io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	f, ok := out.(*os.File)
	return ok && os.Getenv("NO_COLOR") == "" && term.IsTerminal(int(f.Fd()))
}

// Structured prints v as JSON or YAML and reports whether the format
// asked for it.
func (p Printer) Structured(v any) (bool, error) {
	switch p.Format {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return true, err
		}
		_, err = fmt.Fprintln(p.Out, string(b))
		return true, err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return true, err
		}
		_, err = p.Out.Write(b)
		return true, err
	case "":
		return false, nil
	}
	return true, fmt.Errorf("unknown output format %q: use one of %s", p.Format, strings.Join(Formats, ", "))
}

func (p Printer) paint(code, s string) string {
	if !p.Color || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (p Printer) bold(s string) string   { return p.paint("1", s) }
func (p Printer) red(s string) string    { return p.paint("31", s) }
func (p Printer) green(s string) string  { return p.paint("32", s) }
func (p Printer) yellow(s string) string { return p.paint("33", s) }
func (p Printer) dim(s string) string    { return p.paint("2", s) }

// lines writes formatted lines, stopping at the first error.
type lines struct {
	w   io.Writer
	err error
}

func (l *lines) f(format string, a ...any) {
	if l.err == nil {
		_, l.err = fmt.Fprintf(l.w, format+"\n", a...)
	}
}
