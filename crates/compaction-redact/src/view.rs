//! The decoded view: an ASCII reading of a text whose ranges map back to the bytes that
//! spell them.

/// Whether a text has anything the view decodes: a backslash, a percent sign, or a non-ASCII
/// character.
pub(super) fn needs_view(text: &str) -> bool {
    text.bytes().any(|b| b == b'\\' || b == b'%' || b >= 0x80)
}

/// An ASCII reading of a text: JSON escapes collapsed at every depth, `%XX` decoded,
/// full-width ASCII read as ASCII, other non-ASCII characters read as a space. `starts[j]` is
/// the byte of the original text where view byte `j` comes from (`starts[len]` is the
/// original length), so a range of the view maps back to the bytes that spell it.
pub(super) struct View {
    pub(super) text: String,
    pub(super) starts: Vec<usize>,
}

impl View {
    pub(super) fn build(src: &str) -> View {
        let b = src.as_bytes();
        let mut text = String::with_capacity(src.len());
        let mut starts = Vec::with_capacity(src.len() + 1);
        let mut i = 0;
        while i < b.len() {
            let start = i;
            let c = b[i];
            let decoded: char = if c == b'\\' {
                let run = b[i..].iter().take_while(|&&x| x == b'\\').count();
                let j = i + run;
                match b.get(j) {
                    None => {
                        i = j;
                        ' '
                    }
                    Some(&e) => {
                        i = j + 1;
                        match e {
                            b'n' => '\n',
                            b'r' => '\r',
                            b't' => '\t',
                            b'b' | b'f' => ' ',
                            b'u' if b.len() >= j + 5
                                && b[j + 1..j + 5].iter().all(u8::is_ascii_hexdigit) =>
                            {
                                i = j + 5;
                                let code =
                                    u32::from_str_radix(&src[j + 1..j + 5], 16).unwrap_or(32);
                                ascii_reading(char::from_u32(code).unwrap_or(' '))
                            }
                            b'"' | b'\'' | b'/' => e as char,
                            _ => {
                                // Backslashes before a character that is no escape: a
                                // separator, and the character is read on its own.
                                i = j;
                                ' '
                            }
                        }
                    }
                }
            } else if c == b'%'
                && b.len() >= i + 3
                && b[i + 1].is_ascii_hexdigit()
                && b[i + 2].is_ascii_hexdigit()
                && b[i + 1] < b'8'
            {
                i += 3;
                let v = u8::from_str_radix(&src[start + 1..start + 3], 16).unwrap_or(b' ');
                if v.is_ascii_graphic() || v == b' ' || v == b'\n' {
                    v as char
                } else {
                    ' '
                }
            } else if c < 0x80 {
                i += 1;
                c as char
            } else {
                let ch = src[i..].chars().next().unwrap_or(' ');
                i += ch.len_utf8();
                ascii_reading(ch)
            };
            starts.push(start);
            text.push(decoded);
        }
        starts.push(src.len());
        View { text, starts }
    }
}

/// One ASCII character for `c`: itself when ASCII, the ASCII twin of a full-width form, else
/// a space (a separator, so a token glued to CJK text stands alone).
fn ascii_reading(c: char) -> char {
    match c as u32 {
        0..=0x7f => c,
        0xff01..=0xff5e => char::from_u32(c as u32 - 0xfee0).unwrap_or(' '),
        _ => ' ',
    }
}
