package archtest

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"strings"
)

// The table's syntax: rigid, so that a row means one thing to the reader
// and to the test.
const (
	sectionHeading = "## 9. Package map"
	tableHeader    = "| package | owns | imports (ours) | tests also import |"
	tableSeparator = "|---|---|---|---|"
	none           = "—" // an em dash: an imports cell that lists nothing
)

// row is one package of section 9's table. Paths are relative to the module.
type row struct {
	pos         string // "docs/ARCHITECTURE.md:1190", for messages
	pkg         string
	owns        string   // as written: the test does not read it
	imports     []string // imports (ours): what its non-test files import
	testImports []string // tests also import: what its tests add to that
}

// parsePackageMap reads section 9's table from the markdown document r,
// called name in messages. It returns rows only when the whole table is well
// formed, since a map with a bad cell cannot be checked against the code, and
// otherwise one error per bad line, naming it.
func parsePackageMap(name string, r io.Reader) ([]row, []error) {
	lines, err := readLines(r)
	if err != nil {
		return nil, []error{fmt.Errorf("%s: %w", name, err)}
	}
	start, end, err := findSection(name, lines)
	if err != nil {
		return nil, []error{err}
	}
	header, err := findHeader(name, lines[:end], start)
	if err != nil {
		return nil, []error{err}
	}
	return parseRows(name, lines[:end], header)
}

func readLines(r io.Reader) ([]string, error) {
	var lines []string
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20) // the owns cells make long lines
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, sc.Err()
}

// findSection returns the index of section 9's heading and of the line
// after the section's end: the next heading of the same or a higher level.
func findSection(name string, lines []string) (start, end int, err error) {
	start = -1
	for i, line := range lines {
		switch {
		case start < 0 && strings.TrimSpace(line) == sectionHeading:
			start = i
		case start >= 0 && (strings.HasPrefix(line, "## ") || strings.HasPrefix(line, "# ")):
			return start, i, nil
		}
	}
	if start < 0 {
		return 0, 0, fmt.Errorf("%s: no section headed %q", name, sectionHeading)
	}
	return start, len(lines), nil
}

// findHeader returns the index of the table's header row in the section that
// starts at start, pointing at a look-alike when there is none.
func findHeader(name string, lines []string, start int) (int, error) {
	lookAlike := ""
	for i := start; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if line == tableHeader {
			return i, nil
		}
		if lookAlike == "" && strings.HasPrefix(line, "| package |") {
			lookAlike = fmt.Sprintf(" (line %d has %q)", i+1, line)
		}
	}
	return 0, fmt.Errorf("%s:%d: section 9 has no table whose header is %q%s",
		name, start+1, tableHeader, lookAlike)
}

// parseRows parses the table whose header is at lines[header], down to its
// first line that is not a table line.
func parseRows(name string, lines []string, header int) ([]row, []error) {
	var errs []error
	if sep := header + 1; sep >= len(lines) || !isSeparator(lines[sep]) {
		errs = append(errs, fmt.Errorf("%s:%d: the header must be followed by %q", name, sep+1, tableSeparator))
	}
	var rows []row
	for i := header + 2; i < len(lines) && isTableLine(lines[i]); i++ {
		r, err := parseRow(fmt.Sprintf("%s:%d", name, i+1), lines[i])
		if err != nil {
			errs = append(errs, err)
		}
		rows = append(rows, r)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return rows, nil
}

func isTableLine(line string) bool {
	return strings.HasPrefix(strings.TrimSpace(line), "|")
}

// isSeparator accepts any spelling of a four-column delimiter row.
func isSeparator(line string) bool {
	cells := splitCells(line)
	for _, c := range cells {
		if strings.Trim(c, ":-") != "" || !strings.Contains(c, "-") {
			return false
		}
	}
	return len(cells) == 4
}

// parseRow parses one row; its error names pos and every bad cell.
func parseRow(pos, line string) (row, error) {
	cells := splitCells(line)
	if len(cells) != 4 {
		return row{}, fmt.Errorf("%s: a row has 4 cells, this one %d", pos, len(cells))
	}
	r := row{pos: pos, owns: cells[1]}
	var bad []string
	pkg, ok := backtickedPath(cells[0])
	if !ok {
		bad = append(bad, fmt.Sprintf("package %q is not one backticked package path", cells[0]))
	}
	r.pkg = pkg
	var err error
	if r.imports, err = parseList(cells[2]); err != nil {
		bad = append(bad, "imports (ours): "+err.Error())
	}
	if r.testImports, err = parseList(cells[3]); err != nil {
		bad = append(bad, "tests also import: "+err.Error())
	}
	if len(bad) > 0 {
		return row{}, fmt.Errorf("%s: %s", pos, strings.Join(bad, "; "))
	}
	return r, nil
}

// splitCells splits a table line at its pipes, as markdown does: an escaped
// pipe (\|) stays in its cell, as written.
func splitCells(line string) []string {
	line = strings.TrimPrefix(strings.TrimSpace(line), "|")
	if strings.HasSuffix(line, "|") && !strings.HasSuffix(line, `\|`) {
		line = line[:len(line)-1]
	}
	var cells []string
	begin := 0
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\':
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(line[begin:i]))
			begin = i + 1
		}
	}
	return append(cells, strings.TrimSpace(line[begin:]))
}

// parseList parses an imports cell: an em dash, or a comma-separated list
// of backticked package paths, each once.
func parseList(cell string) ([]string, error) {
	if cell == none {
		return nil, nil
	}
	var paths []string
	seen := map[string]bool{}
	for _, item := range strings.Split(cell, ",") {
		p, ok := backtickedPath(strings.TrimSpace(item))
		if !ok {
			return nil, fmt.Errorf("%q is not a backticked package path (write %s, or a list like `cluster`, `configs`)",
				strings.TrimSpace(item), none)
		}
		if seen[p] {
			return nil, fmt.Errorf("`%s` is listed twice", p)
		}
		seen[p] = true
		paths = append(paths, p)
	}
	return paths, nil
}

// backtickedPath returns the clean, module-relative path in a cell like
// `proto/cluster/v1`.
func backtickedPath(cell string) (string, bool) {
	if len(cell) < 3 || cell[0] != '`' || cell[len(cell)-1] != '`' {
		return "", false
	}
	p := cell[1 : len(cell)-1]
	if strings.ContainsAny(p, "` \t") || p != path.Clean(p) || path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
		return "", false
	}
	return p, true
}

// formatTable writes rows as section 9's table, header included, in the
// order given.
func formatTable(rows []row) string {
	var b strings.Builder
	b.WriteString(tableHeader + "\n" + tableSeparator + "\n")
	for _, r := range rows {
		owns := r.owns
		if owns != "" {
			owns += " "
		}
		fmt.Fprintf(&b, "| `%s` | %s| %s | %s |\n", r.pkg, owns, formatList(r.imports), formatList(r.testImports))
	}
	return b.String()
}

func formatList(paths []string) string {
	if len(paths) == 0 {
		return none
	}
	return "`" + strings.Join(paths, "`, `") + "`"
}
