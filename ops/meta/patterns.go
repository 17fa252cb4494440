package meta

// Hand-written matchers for the two zod regexes every metadata read runs
// (uuidPattern and datetimePattern in validate.go, which stay the
// definition: patterns_test.go checks these against them). A catalog
// rebuild validates 100,000 files; the regexes alone were ~10% of its CPU.

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isUUID is uuidPattern: 8-4-4-4-12 hex digits, version nibble 1–8, variant
// 8, 9, a or b (either case) — or the nil UUID, or the lower-case max UUID.
func isUUID(s string) bool {
	if s == "00000000-0000-0000-0000-000000000000" || s == "ffffffff-ffff-ffff-ffff-ffffffffffff" {
		return true
	}
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		case 14:
			if c < '1' || c > '8' {
				return false
			}
		case 19:
			switch c {
			case '8', '9', 'a', 'b', 'A', 'B':
			default:
				return false
			}
		default:
			if !isHex(c) {
				return false
			}
		}
	}
	return true
}

// isDatetime is datetimePattern: a real calendar date YYYY-MM-DD (29
// February only in Gregorian leap years), 'T', HH:MM with optional :SS and
// optional fraction of one or more digits, then 'Z'.
func isDatetime(s string) bool {
	if len(s) < 17 { // YYYY-MM-DDTHH:MMZ
		return false
	}
	for _, i := range []int{0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15} {
		if !isDigit(s[i]) {
			return false
		}
	}
	if s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' {
		return false
	}
	year := int(s[0]-'0')*1000 + int(s[1]-'0')*100 + int(s[2]-'0')*10 + int(s[3]-'0')
	month := int(s[5]-'0')*10 + int(s[6]-'0')
	day := int(s[8]-'0')*10 + int(s[9]-'0')
	if day < 1 || month < 1 || month > 12 {
		return false
	}
	maxDay := 31
	switch month {
	case 4, 6, 9, 11:
		maxDay = 30
	case 2:
		maxDay = 28
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			maxDay = 29
		}
	}
	if day > maxDay {
		return false
	}
	hour := int(s[11]-'0')*10 + int(s[12]-'0')
	if hour > 23 || s[14] > '5' {
		return false
	}
	rest := s[16:]
	if rest[0] == ':' {
		if len(rest) < 4 || !isDigit(rest[1]) || !isDigit(rest[2]) || rest[1] > '5' {
			return false
		}
		rest = rest[3:]
		if rest[0] == '.' {
			n := 1
			for n < len(rest) && isDigit(rest[n]) {
				n++
			}
			if n == 1 {
				return false
			}
			rest = rest[n:]
		}
	}
	return rest == "Z"
}
