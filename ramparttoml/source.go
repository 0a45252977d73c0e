package ramparttoml

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// source finds the lines of keys in a TOML file, for errors.
type source struct {
	path  string
	lines []string
}

// indexed returns key, a dotted key of toml's errors (without the indexes
// of arrays of tables), with its indexes: the key set on line that it
// names. It returns key as it is when no key on line matches.
func (s source) indexed(line int, key string) string {
	out := key
	s.walk(func(k toml.Key, l int) {
		if l == line && dotted(unindexed(k)) == key {
			out = dotted(k)
		}
	})
	return out
}

// decodeError is the error of err, an error of BurntSushi/toml's decoding
// (of candidate i, when i >= 0), at the line and key it is about.
func (s source) decodeError(err error, i int) error {
	var line int
	var key, msg string
	var pe toml.ParseError
	if errors.As(err, &pe) {
		line, key, msg = pe.Position.Line, pe.LastKey, pe.Message
	} else if m := typeErrRe.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		key, msg = m[2], m[3]
	} else {
		return fmt.Errorf("%s: %w", s.path, err)
	}
	if key == "" {
		return fmt.Errorf("%s:%d: %s", s.path, line, msg)
	}
	if i >= 0 {
		// toml's line is where the last candidate sets key: find the
		// line where candidate i does.
		in := fmt.Sprint(i)
		if k, l := s.find(func(k toml.Key) bool {
			return len(k) > 1 && k[0] == "candidate" && k[1] == in && dotted(unindexed(k)) == key
		}); l > 0 {
			return fmt.Errorf("%s:%d: %s: %s", s.path, l, dotted(k), msg)
		}
	}
	return fmt.Errorf("%s:%d: %s: %s", s.path, line, s.indexed(line, key), msg)
}

func (s source) errorf(key toml.Key, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s: %s", s.path, s.line(key), dotted(key), fmt.Sprintf(format, args...))
}

// fieldError reports err, a rampart error naming a Go field, at the key
// under section whose Go name it mentions most fully (SlowCalls.Ratio is
// slow_calls.ratio, not failure_rate.ratio), the first mentioned of
// those (MaxCoolDown must be >= CoolDown is max_cool_down), or at the
// section.
func (s source) fieldError(section toml.Key, err error) error {
	msg := err.Error()
	best, bestScore, bestAt := section, 0, 0
	for _, k := range s.keysUnder(section) {
		score, at := mentions(msg, unindexed(k[len(section):]))
		if score > bestScore || score > 0 && score == bestScore && at < bestAt {
			best, bestScore, bestAt = k, score, at
		}
	}
	return fmt.Errorf("%s:%d: %s: %s", s.path, s.line(best), dotted(best), msg)
}

// goNames are the Go names of the tables not named as camel names them.
var goNames = map[string]string{"probes": "SuccessRate"}

// mentions returns how many trailing parts of key msg names as a dotted
// Go name (ratio as Ratio is 1, slow_calls.ratio as SlowCalls.Ratio 2),
// and where; 0 when it names none.
func mentions(msg string, key toml.Key) (parts, at int) {
	for n := len(key); n > 0; n-- {
		var names []string
		for i, p := range key[len(key)-n:] {
			name, ok := goNames[p]
			if !ok || i == n-1 { // a field is named as camel names it
				name = camel(p)
			}
			names = append(names, name)
		}
		if loc := regexp.MustCompile(`\b` + regexp.QuoteMeta(strings.Join(names, ".")) + `\b`).FindStringIndex(msg); loc != nil {
			return n, loc[0]
		}
	}
	return 0, 0
}

// keysUnder lists the keys set under section (candidate indexes as
// numbers), in file order.
func (s source) keysUnder(section toml.Key) []toml.Key {
	var out []toml.Key
	s.walk(func(k toml.Key, _ int) {
		if len(k) > len(section) && strings.HasPrefix(dotted(k)+".", dotted(section)+".") {
			out = append(out, k)
		}
	})
	return out
}

// line returns the line (from 1) where key is set or its table begins,
// or 0.
func (s source) line(key toml.Key) int {
	want := dotted(key)
	_, line := s.find(func(k toml.Key) bool { return dotted(k) == want })
	return line
}

// find returns the first key that match accepts, and its line.
func (s source) find(match func(toml.Key) bool) (toml.Key, int) {
	var found toml.Key
	line := 0
	s.walk(func(k toml.Key, l int) {
		if line == 0 && match(k) {
			found, line = k, l
		}
	})
	return found, line
}

var (
	// typeErrRe matches the errors of BurntSushi/toml that are not a
	// ParseError, such as a value of the wrong type; the key has no array
	// indexes.
	typeErrRe = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]+)"\): (.*)$`)
	tableRe   = regexp.MustCompile(`^\s*(\[\[?)\s*([A-Za-z0-9_.\- ]+?)\s*\]\]?`)
	// keyRe matches a key, dotted or not, and the = after it.
	keyRe = regexp.MustCompile(`^\s*([A-Za-z0-9_\-]+(?:\s*\.\s*[A-Za-z0-9_\-]+)*)\s*=\s*`)
)

// walk calls f with each table and key of the file and its line, in file
// order; the elements of arrays of tables get their index as a key part
// (candidate.1.breaker). Dotted keys (breaker.max_probes = 2) and the keys
// of inline tables (window = {size = 20}) are walked too, each table they
// open before its keys.
func (s source) walk(f func(k toml.Key, line int)) {
	counts := map[string]int{}
	var table toml.Key
	for i, l := range s.lines {
		if m := tableRe.FindStringSubmatch(l); m != nil {
			parts := strings.Split(m[2], ".")
			table = nil
			for j, p := range parts {
				table = append(table, strings.TrimSpace(p))
				// Inside an element of an array of tables, index it.
				if n, ok := counts[dotted(table)]; ok && !(m[1] == "[[" && j == len(parts)-1) {
					table = append(table, fmt.Sprint(n-1))
				}
			}
			if m[1] == "[[" {
				counts[dotted(table)]++
				table = append(table, fmt.Sprint(counts[dotted(table)]-1))
			}
			f(table, i+1)
			continue
		}
		keyValues(l, table, func(k toml.Key) { f(k, i+1) })
	}
}

// keyValues calls f with the key of each key/value pair at the start of
// s, under table, and with the keys of an inline table that is its value,
// recursively; it returns the rest of s after the value.
func keyValues(s string, table toml.Key, f func(toml.Key)) string {
	m := keyRe.FindStringSubmatchIndex(s)
	if m == nil {
		return ""
	}
	key := append(toml.Key{}, table...)
	for _, p := range strings.Split(s[m[2]:m[3]], ".") {
		key = append(key, strings.TrimSpace(p))
		f(key)
	}
	rest := s[m[1]:]
	if !strings.HasPrefix(rest, "{") {
		return skipValue(rest)
	}
	rest = rest[1:]
	for {
		rest = strings.TrimLeft(rest, " \t,")
		if rest == "" || rest[0] == '}' {
			return strings.TrimPrefix(rest, "}")
		}
		next := keyValues(rest, key, f)
		if len(next) >= len(rest) {
			return "" // not a key: give up on this line
		}
		rest = next
	}
}

// skipValue returns s after the plain value (string, number, array…) at
// its start: after the first comma or closing brace outside quotes and
// brackets.
func skipValue(s string) string {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\'':
			j := i + 1
			for j < len(s) && s[j] != c {
				if c == '"' && s[j] == '\\' {
					j++
				}
				j++
			}
			i = j
		case '[', '{':
			depth++
		case ']':
			depth--
		case '}':
			if depth == 0 {
				return s[i:]
			}
			depth--
		case ',':
			if depth == 0 {
				return s[i:]
			}
		}
	}
	return ""
}

func dotted(k toml.Key) string { return strings.Join(k, ".") }

// camel turns a TOML key into the Go field name it configures:
// max_probes → MaxProbes.
func camel(s string) string {
	var b strings.Builder
	for _, p := range strings.Split(s, "_") {
		if p != "" {
			b.WriteString(strings.ToUpper(p[:1]) + p[1:])
		}
	}
	return b.String()
}
