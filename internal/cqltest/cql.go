package cqltest

import (
	"fmt"
	"strings"
	"unicode"
)

// The few CQL statements the server understands:
//
//	SELECT * | count(*) | col, … FROM [ks.]table [WHERE col = ?|literal [AND …]] [LIMIT n]
//	INSERT INTO [ks.]table (col, …) VALUES (?, …)
//	USE ks
//
// Anything else is a syntax error (0x2000), as an unparsable statement
// is to Cassandra.

type stmtKind int

const (
	stmtSelect stmtKind = iota + 1
	stmtInsert
	stmtUse
)

// stmt is a parsed statement.
type stmt struct {
	kind     stmtKind
	keyspace string // as written; "" for the connection's keyspace
	table    string
	cols     []string // SELECT: the columns (nil: *); INSERT: the columns
	count    bool     // SELECT count(*)
	where    []cond
	binds    int // bind markers (?) in order of appearance
}

// cond is "col = ?" (bind ≥ 0, the marker's index) or "col = literal".
type cond struct {
	col     string
	bind    int
	literal string
	quoted  bool // literal was a 'string'
}

type token struct {
	text   string
	quoted bool // a 'string' literal
}

func tokenize(q string) ([]token, error) {
	var out []token
	for i := 0; i < len(q); {
		c := rune(q[i])
		switch {
		case unicode.IsSpace(c) || c == ';':
			i++
		case c == '\'':
			j := i + 1
			var b strings.Builder
			for ; j < len(q); j++ {
				if q[j] == '\'' {
					if j+1 < len(q) && q[j+1] == '\'' {
						b.WriteByte('\'')
						j++
						continue
					}
					break
				}
				b.WriteByte(q[j])
			}
			if j >= len(q) {
				return nil, fmt.Errorf("unterminated string")
			}
			out = append(out, token{text: b.String(), quoted: true})
			i = j + 1
		case c == '"':
			j := strings.IndexByte(q[i+1:], '"')
			if j < 0 {
				return nil, fmt.Errorf("unterminated quoted identifier")
			}
			out = append(out, token{text: q[i+1 : i+1+j]})
			i += j + 2
		case strings.ContainsRune("(),*=?.<>", c):
			out = append(out, token{text: string(c)})
			i++
		case c == '_' || c == '-' || unicode.IsLetter(c) || unicode.IsDigit(c):
			j := i
			for j < len(q) && (q[j] == '_' || q[j] == '-' || unicode.IsLetter(rune(q[j])) || unicode.IsDigit(rune(q[j]))) {
				j++
			}
			out = append(out, token{text: strings.ToLower(q[i:j])})
			i = j
		default:
			return nil, fmt.Errorf("unexpected character %q", c)
		}
	}
	return out, nil
}

type parser struct {
	toks []token
	pos  int
	err  error
}

func (p *parser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos].text
	}
	return ""
}

func (p *parser) next() token {
	if p.pos < len(p.toks) {
		p.pos++
		return p.toks[p.pos-1]
	}
	if p.err == nil {
		p.err = fmt.Errorf("unexpected end of statement")
	}
	return token{}
}

func (p *parser) expect(s string) {
	if t := p.next(); t.text != s && p.err == nil {
		p.err = fmt.Errorf("expected %q, got %q", s, t.text)
	}
}

func (p *parser) ident() string {
	t := p.next()
	if p.err == nil && (t.quoted || t.text == "" || strings.ContainsAny(t.text, "(),*=?.")) {
		p.err = fmt.Errorf("expected a name, got %q", t.text)
	}
	return t.text
}

func (p *parser) tableName(s *stmt) {
	s.table = p.ident()
	if p.peek() == "." {
		p.next()
		s.keyspace, s.table = s.table, p.ident()
	}
}

// parse parses q, or returns the syntax error Cassandra would.
func parse(q string) (*stmt, *cqlError) {
	toks, err := tokenize(q)
	if err != nil {
		return nil, errorf(codeSyntax, "line 1:0 %v", err)
	}
	p := &parser{toks: toks}
	s := &stmt{}
	switch p.next().text {
	case "select":
		s.kind = stmtSelect
		p.selectList(s)
		p.expect("from")
		p.tableName(s)
		if p.peek() == "where" {
			p.next()
			for {
				c := cond{col: p.ident(), bind: -1}
				p.expect("=")
				t := p.next()
				if t.text == "?" && !t.quoted {
					c.bind = s.binds
					s.binds++
				} else {
					c.literal, c.quoted = t.text, t.quoted
				}
				s.where = append(s.where, c)
				if p.peek() != "and" {
					break
				}
				p.next()
			}
		}
		if p.peek() == "limit" {
			p.next()
			p.next()
		}
	case "insert":
		s.kind = stmtInsert
		p.expect("into")
		p.tableName(s)
		p.expect("(")
		for p.err == nil {
			s.cols = append(s.cols, p.ident())
			if p.peek() != "," {
				break
			}
			p.next()
		}
		p.expect(")")
		p.expect("values")
		p.expect("(")
		for i := range s.cols {
			if i > 0 {
				p.expect(",")
			}
			p.expect("?")
			s.binds++
		}
		p.expect(")")
	case "use":
		s.kind = stmtUse
		s.keyspace = p.ident()
	default:
		p.err = fmt.Errorf("no viable alternative at input %q", q)
	}
	if p.err == nil && p.pos < len(p.toks) {
		p.err = fmt.Errorf("extraneous input %q", p.toks[p.pos].text)
	}
	if p.err != nil {
		return nil, errorf(codeSyntax, "line 1:0 %v", p.err)
	}
	return s, nil
}

func (p *parser) selectList(s *stmt) {
	switch p.peek() {
	case "*":
		p.next()
		return
	case "count":
		p.next()
		p.expect("(")
		p.expect("*")
		p.expect(")")
		s.count = true
		return
	}
	for p.err == nil {
		s.cols = append(s.cols, p.ident())
		if p.peek() != "," {
			return
		}
		p.next()
	}
}
