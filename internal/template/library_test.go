package template

import (
	"errors"
	"strings"
	"testing"
)

func testHost() Host {
	env := map[string]string{"ZKCONF_TEST_REGION": "eu-west", "EMPTY": ""}
	return Host{
		Hostname: "web-1.example",
		Labels:   map[string]string{"role": "web", "zone": "eu-1", "hostname": "web-1.example"},
		LookupEnv: func(k string) (string, bool) {
			v, ok := env[k]
			return v, ok
		},
	}
}

func execHost(t *testing.T, text string, snap Snapshot, host Host) (string, error) {
	t.Helper()
	tm, err := Parse("t", text)
	if err != nil {
		t.Fatalf("parse %q: %v", text, err)
	}
	out, err := tm.ExecuteWith(snap, host)
	return string(out), err
}

// TestHostHelpers: hostname, env, label and labels report the Host the
// caller passes in, and nothing else.
func TestHostHelpers(t *testing.T) {
	for _, tt := range []struct{ name, tmpl, want string }{
		{"hostname", `{{ hostname }}`, "web-1.example"},
		{"env", `{{ env "ZKCONF_TEST_REGION" }}`, "eu-west"},
		{"env unset is empty", `[{{ env "ZKCONF_TEST_NOT_SET" }}]`, "[]"},
		{"env default", `{{ env "ZKCONF_TEST_NOT_SET" | default "us" }}`, "us"},
		{"label", `{{ label "role" }}/{{ label "zone" }}`, "web/eu-1"},
		{"labels", `{{ range $k, $v := labels }}{{ $k }}={{ $v }};{{ end }}`, "hostname=web-1.example;role=web;zone=eu-1;"},
		{"hasKey labels", `{{ hasKey labels "zone" }} {{ hasKey labels "rack" }}`, "true false"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := execHost(t, tt.tmpl, testSnap(), testHost())
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	// Execute passes no host: the same template renders the same anywhere.
	got, err := Render("t", `[{{ hostname }}][{{ env "PATH" }}][{{ len labels }}]`, testSnap())
	if err != nil || got == nil || string(got) != "[][][0]" {
		t.Fatalf("zero host: %q, %v", got, err)
	}
}

// TestLabelMissing: a label that is not configured is an error, naming it
// when the template spells it out and giving only its length when it was
// computed (possibly from item content).
func TestLabelMissing(t *testing.T) {
	_, err := execHost(t, `{{ label "rack" }}`, testSnap(), testHost())
	if !errors.Is(err, ErrMissingLabel) || !strings.Contains(err.Error(), `label "rack" is not set`) {
		t.Fatalf("err = %v", err)
	}
	_, err = execHost(t, `{{ label (item "db.password") }}`, testSnap(), testHost())
	if !errors.Is(err, ErrMissingLabel) || strings.Contains(err.Error(), secret) {
		t.Fatalf("err = %v", err)
	}
}

// TestLibrary: sprig's hermetic functions are available; zkconf's helpers
// win a name clash.
func TestLibrary(t *testing.T) {
	for _, tt := range []struct{ name, tmpl, want string }{
		{"upper", `{{ "abc" | upper }}`, "ABC"},
		{"join splitList", `{{ splitList "," "a,b,c" | join "+" }}`, "a+b+c"},
		{"b64enc", `{{ item "motd" | trim | b64enc }}`, "aGVsbG8Kd29ybGQ="},
		{"sha256sum", `{{ sha256sum "x" }}`, "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"},
		{"dict get", `{{ get (dict "a" "1" "b" "2") "b" }}`, "2"},
		{"quote", `{{ quote "x" }}`, `"x"`},
		{"replace", `{{ replace "." "-" "a.b.c" }}`, "a-b-c"},
		{"semverCompare", `{{ semverCompare ">=1.2.0" "1.3.0" }}`, "true"},
		{"nindent", `{{ nindent 2 "a" }}`, "\n  a"},
		{"seq", `{{ seq 3 }}`, "1 2 3"},
		{"until", `{{ until 3 }}`, "[0 1 2]"},
		{"repeat", `{{ repeat 3 "ab" }}`, "ababab"},
		// zkconf's has tests for an item, not list membership (sprig's
		// has; mustHas is still there).
		{"has is ours", `{{ has "motd" }} {{ mustHas 2 (list 1 2) }}`, "true true"},
		// zkconf's split returns a list, sprig's a map.
		{"split is ours", `{{ index (split "," "x,y") 1 }}`, "y"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := execHost(t, tt.tmpl, testSnap(), Host{})
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	for _, name := range []string{"has", "split", "join", "indent", "default", "trim", "upper", "lower"} {
		if !strings.Contains(" "+strings.Join(Shadowed(), " ")+" ", " "+name+" ") {
			t.Errorf("Shadowed() = %v lacks %s", Shadowed(), name)
		}
	}
}

// TestLibraryIsDeterministic: functions that read the clock, draw random
// numbers, look at the environment or the network are not defined, so a
// template using one fails to parse (at configuration load, not at apply).
func TestLibraryIsDeterministic(t *testing.T) {
	for _, name := range []string{"now", "date", "randAlpha", "randInt", "uuidv4", "shuffle", "bcrypt",
		"htpasswd", "genPrivateKey", "genCA", "encryptAES", "ago", "expandenv", "getHostByName", "randBytes"} {
		if _, err := Parse("t", "{{ "+name+" }}"); err == nil || !strings.Contains(err.Error(), `function "`+name+`" not defined`) {
			t.Errorf("%s: parse err = %v, want not defined", name, err)
		}
	}
}

// TestLibraryErrorsRedacted: an error from a library function applied to
// item content does not quote the content.
func TestLibraryErrorsRedacted(t *testing.T) {
	snap := mapSnap{gen: 7, items: map[string]string{"cfg": `{"password": "` + secret + `"}`, "pw": secret}}
	for _, tmpl := range []string{
		`{{ item "pw" | mustFromJson }}`,
		`{{ item "pw" | b64dec | mustFromJson }}`,
		`{{ mustRegexMatch (printf "(%s" (item "pw")) "x" }}`,
		`{{ regexSplit (printf "(%s" (item "pw")) "x" -1 }}`,
		`{{ semver (item "pw") }}`,
		`{{ fail (item "pw") }}`,
		`{{ item "pw" | atoi | add1 | mustToJson | mustFromJson | get (dict) }}`,
		`{{ index (splitList "," (item "pw")) 5 }}`,
		`{{ toDecimal (item "pw") | int | repeat (item "pw" | len | mul 1000000000000) }}`,
	} {
		_, err := execHost(t, tmpl, snap, Host{})
		if err == nil {
			t.Errorf("%s: no error", tmpl)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: error quotes item content: %v", tmpl, err)
		}
	}
}

// TestLibraryBounded: library functions whose result size an argument
// sets are bounded by MaxOutputBytes.
func TestLibraryBounded(t *testing.T) {
	for _, tmpl := range []string{
		`{{ repeat 1000000 "0123456789" }}`,
		`{{ until 10000000 | len }}`,
		`{{ untilStep 0 100000000 1 | len }}`,
		`{{ seq 100000000 | len }}`,
		`{{ nindent 10000000 "a" }}`,
		`{{ replace "" (repeat 1000 "x") (repeat 2000 "y") }}`,
	} {
		tm, err := ParseWithLimits("t", tmpl, Limits{MaxOutputBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		_, err = tm.Execute(testSnap())
		if !errors.Is(err, ErrOutputTooLarge) {
			t.Errorf("%s: err = %v, want ErrOutputTooLarge", tmpl, err)
		}
	}
}
