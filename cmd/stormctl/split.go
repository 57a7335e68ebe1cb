package main

import (
	"errors"
	"strings"
)

// splitCommand splits s into words with a small subset of the POSIX shell's
// quoting rules, so --worker-command can be written as on a command line:
//
//   - unquoted blanks (space, tab, newline) separate words;
//   - outside quotes, a backslash makes the next character literal, and a
//     backslash before a newline is removed with it;
//   - inside '...', every character is literal (no escapes);
//   - inside "...", a backslash escapes only " \ $ ` and newline, and is
//     kept before any other character;
//   - quoted parts join the word around them: a"b c"d is one word, and
//     empty quotes make an empty word.
//
// Nothing is expanded: $VAR, ~, * and {code_dir} stay as written. An
// unterminated quote or a trailing backslash is an error.
func splitCommand(s string) ([]string, error) {
	var (
		words  []string
		word   strings.Builder
		inWord bool // a word has started, even if it is empty so far ('')
	)
	end := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; r {
		case ' ', '\t', '\n':
			end()
		case '\\':
			i++
			if i == len(rs) {
				return nil, errors.New("trailing backslash")
			}
			if rs[i] != '\n' {
				word.WriteRune(rs[i])
				inWord = true
			}
		case '\'':
			inWord = true
			j := i + 1
			for j < len(rs) && rs[j] != '\'' {
				j++
			}
			if j == len(rs) {
				return nil, errors.New("unterminated single quote")
			}
			word.WriteString(string(rs[i+1 : j]))
			i = j
		case '"':
			inWord = true
			closed := false
			for i++; i < len(rs); i++ {
				c := rs[i]
				if c == '"' {
					closed = true
					break
				}
				if c == '\\' && i+1 < len(rs) {
					switch next := rs[i+1]; next {
					case '"', '\\', '$', '`':
						word.WriteRune(next)
						i++
						continue
					case '\n':
						i++
						continue
					}
				}
				word.WriteRune(c)
			}
			if !closed {
				return nil, errors.New("unterminated double quote")
			}
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	end()
	return words, nil
}
