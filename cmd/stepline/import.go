package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stepline/stepline/compiler"
	"github.com/stepline/stepline/compiler/gate"
	"github.com/stepline/stepline/shared/executor/settings"
	"github.com/stepline/stepline/shared/importer"
)

// cmdImportVectorStep converts a reference (VectorStep) project into a Stepline
// project: stepline import vectorstep [--force] SRC DEST. It prints what
// it wrote, the conversions by kind, what it left out and what needs a
// person, then validates every pipeline it wrote in DEST through package
// gate, exactly as stepline validate does. It exits 0 when nothing needs
// a person and every pipeline validates, 1 otherwise (also when DEST
// holds files it did not write), 2 on bad arguments.
func cmdImportVectorStep(c *cobra.Command) action {
	force := c.Flags().Bool("force", false, "overwrite files in DEST that the importer did not write, or that were changed since")
	return func(_ context.Context, e env, args []string) int {
		return importVectorStep(e, args[0], args[1], *force)
	}
}

func importVectorStep(e env, src, dest string, force bool) int {
	res, err := importer.Import(src, dest, importer.Options{Force: force, Schema: compiler.Schema()})
	if err != nil {
		var ce *importer.ConflictError
		if errors.As(err, &ce) {
			fmt.Fprintf(e.stderr, "stepline: %s holds files the importer did not write, or that were changed since: %s\n", dest, strings.Join(ce.Paths, ", "))
			fmt.Fprintln(e.stderr, "stepline: nothing was written; pass --force to overwrite them")
			return exitFailed
		}
		fmt.Fprintf(e.stderr, "stepline: import: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(e.stdout, "imported %s into %s\n", src, dest)
	printImport(e, src, res)
	invalid := validateImported(e, res)
	person := count(res.Notes, importer.Person)
	fmt.Fprintf(e.stdout, "\n%d pipeline(s), %d library step(s); %d need(s) a person; %d pipeline(s) or step(s) not valid\n", len(res.Pipelines), len(res.Steps), person, invalid)
	if person > 0 || invalid > 0 {
		return exitFailed
	}
	return exitOK
}

func count(ns []importer.Note, l importer.Level) int {
	n := 0
	for _, x := range ns {
		if x.Level == l {
			n++
		}
	}
	return n
}

func printImport(e env, src string, res *importer.Result) {
	fmt.Fprintln(e.stdout, "\nfiles:")
	for _, f := range res.Files {
		fmt.Fprintf(e.stdout, "  %-9s %s\n", f.Action, f.Path)
	}
	kinds := map[string]int{}
	for _, n := range res.Notes {
		if n.Level == importer.Converted || n.Level == importer.Check {
			kinds[n.Kind]++
		}
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Fprintln(e.stdout, "\nconversions by kind:")
	for _, k := range names {
		fmt.Fprintf(e.stdout, "  %-22s %d\n", k, kinds[k])
	}
	for _, sec := range []struct {
		level importer.Level
		title string
	}{
		{importer.Check, "converted with a difference (check the meaning)"},
		{importer.Dropped, "left out"},
		{importer.Person, "needs a person"},
	} {
		n := count(res.Notes, sec.level)
		if n == 0 {
			continue
		}
		fmt.Fprintf(e.stdout, "\n%s (%d):\n", sec.title, n)
		for _, x := range res.Notes {
			if x.Level == sec.level {
				fmt.Fprintf(e.stdout, "  %s\n", noteLine(src, x))
			}
		}
	}
}

// noteLine is a note as file:line:col: message: original, the file
// named as the source's path.
func noteLine(src string, n importer.Note) string {
	s := fmt.Sprintf("%s:%d:%d: %s", filepath.ToSlash(filepath.Join(src, n.File)), n.Line, n.Col, n.Msg)
	if n.Original != "" {
		o := strings.Join(strings.Fields(n.Original), " ")
		if len(o) > 120 {
			o = o[:117] + "..."
		}
		s += ": " + o
	}
	return s
}

// validateImported validates what the import wrote, in DEST's project,
// through the one compile path, printing errors and warnings as validate
// does: a problem of the project (stepline.yaml, a profile), which every
// file's check carries, once. It returns how many files are not valid.
func validateImported(e env, res *importer.Result) int {
	fmt.Fprintln(e.stdout, "\nvalidate:")
	defaults := settings.DefaultsFromEnv(e.getenv)
	invalid := 0
	printed := map[string]bool{}
	for _, path := range append(append([]string(nil), res.Pipelines...), res.Steps...) {
		p, err := gate.Project(path, "")
		if err != nil {
			fmt.Fprintf(e.stdout, "  %s: %v\n", path, err)
			invalid++
			continue
		}
		var ds compiler.Diagnostics
		if p.IsStepFile(path) {
			_, ds, err = gate.CheckStepFile(path, p, defaults)
			ds = append(projectProblems(p), ds...) // a pipeline's compile carries them already
		} else {
			_, _, ds, err = gate.CompileFileIn(path, p, defaults)
		}
		if err != nil {
			fmt.Fprintf(e.stdout, "  %s: %v\n", path, err)
			invalid++
			continue
		}
		for _, d := range ds {
			s := d.String()
			if d.Pos.File != path && printed[s] {
				continue // a project's problem, already printed
			}
			printed[s] = true
			if d.Pos.File == path || d.Pos.File == "" || !d.Warning {
				fmt.Fprintf(e.stdout, "  %s\n", s)
			}
		}
		if ds.HasErrors() {
			invalid++
			continue
		}
		fmt.Fprintf(e.stdout, "  %s: valid\n", filepath.ToSlash(path))
	}
	return invalid
}
