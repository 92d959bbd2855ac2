package cmd

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"text/template"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kandev/kandev/core"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/cli.md")

// TestCLIDocs keeps docs/cli.md equal to the command tree.
func TestCLIDocs(t *testing.T) {
	root := NewCmdRoot(NewFactory())
	var b strings.Builder
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		if c.Runnable() {
			writeCommandDoc(&b, c)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	tmpl := template.Must(template.ParseFiles(filepath.Join("testdata", "cli.md.tmpl")))
	var out bytes.Buffer
	if err := tmpl.Execute(&out, map[string]string{"Commands": strings.TrimRight(b.String(), "\n"),
		"JSONRule": strings.ReplaceAll(jsonRule, "\n", "\n  ")}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "docs", "cli.md")
	if *updateDocs {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (regenerate: go test ./cmd -run TestCLIDocs -update)", err)
	}
	if !bytes.Equal(have, out.Bytes()) {
		t.Fatal("docs/cli.md is out of date: go test ./cmd -run TestCLIDocs -update")
	}
}

func writeCommandDoc(b *strings.Builder, c *cobra.Command) {
	fmt.Fprintf(b, "## %s\n\n", c.CommandPath())
	fmt.Fprintf(b, "```\n%s\n```\n\n", strings.TrimSpace(c.UseLine()))
	text := c.Long
	if text == "" {
		text = c.Short
	}
	fmt.Fprintf(b, "%s\n\n", strings.TrimSpace(text))
	if c.Example != "" {
		fmt.Fprintf(b, "```\n%s\n```\n\n", strings.TrimRight(c.Example, "\n"))
	}
	var flags []string
	c.NonInheritedFlags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		name := "--" + f.Name
		if f.Shorthand != "" {
			name = "-" + f.Shorthand + ", " + name
		}
		if f.Value.Type() != "bool" {
			name += " " + strings.ToUpper(f.Value.Type())
		}
		line := fmt.Sprintf("| `%s` | %s", name, strings.ReplaceAll(f.Usage, "|", "\\|"))
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" && f.DefValue != "0" && f.DefValue != "0s" {
			line += fmt.Sprintf(" (default `%s`)", f.DefValue)
		}
		flags = append(flags, line+" |")
	})
	if len(flags) > 0 {
		b.WriteString("| flag | meaning |\n|---|---|\n")
		b.WriteString(strings.Join(flags, "\n"))
		b.WriteString("\n\n")
	}
}

// TestAgentsDocAgrees holds docs/agents.md to the table doctor and task
// create quote: each built-in's install command and credentials variables.
func TestAgentsDocAgrees(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "agents.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, a := range core.AgentInfos() {
		if !strings.Contains(doc, a.Install) {
			t.Errorf("docs/agents.md lacks %s's install command %q", a.Profile, a.Install)
		}
		head := "(`" + a.Profile + "`)"
		i := strings.Index(doc, head)
		if i < 0 {
			t.Errorf("docs/agents.md has no section for %s", a.Profile)
			continue
		}
		section := doc[i:]
		if j := strings.Index(section[1:], "\n### "); j >= 0 {
			section = section[:j+1]
		}
		for _, v := range a.Credentials {
			if !strings.Contains(section, "`"+v+"`") && !strings.Contains(section, "`"+v+"=") {
				t.Errorf("docs/agents.md's %s section does not name %s", a.Profile, v)
			}
		}
	}
}

// The docs say the exit code kandev wait gives a budget halt that the code
// gives (issue 37: they said 16, a stop's, while wait exits 17).
func TestBudgetWaitCodeDocsAgree(t *testing.T) {
	want := fmt.Sprint(waitCode("budget"))
	if want == fmt.Sprint(waitCode("stopped")) {
		t.Fatalf("a budget halt and a stop exit alike (%s)", want)
	}
	for file, re := range map[string]string{
		"usage.md":                            "`kandev wait`\\s+exits \\*\\*(\\d+)\\*\\*",
		"decisions/0051-usage-and-budgets.md": "`kandev wait` exits (\\d+)",
	} {
		b, err := os.ReadFile(filepath.Join("..", "docs", file))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(re).FindAllStringSubmatch(string(b), -1)
		if len(m) == 0 {
			t.Errorf("docs/%s says no exit code of kandev wait for a budget", file)
		}
		for _, x := range m {
			if x[1] != want {
				t.Errorf("docs/%s says kandev wait exits %s on a budget halt; it exits %s", file, x[1], want)
			}
		}
	}
}
