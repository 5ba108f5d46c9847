//! Credential and look-alike corpora for the redaction tests (issue 22).
//!
//! Every credential is synthetic: a real vendor prefix joined at run time to a body drawn from a
//! seeded generator of the right alphabet and length, so the repository holds no key-shaped
//! literal (nothing for a push-protection scanner to match) and each run plants the same
//! values. [`credentials`] gives the shapes, one per rule family and per context the redactor
//! promises to handle; [`benign`] gives text that merely names or resembles secrets and must
//! pass unchanged.

mod credential_shapes;
mod look_alikes;

/// The credential shapes, at least one per rule family and per context.
pub fn credentials() -> Vec<Planted> {
    credential_shapes::all()
}

/// Text that names or resembles secrets without holding one: it must pass unchanged.
pub fn benign() -> Vec<String> {
    look_alikes::all()
}

/// A planted credential: the text as a user or tool would write it, and the parts of it that
/// must never be seen (a test checks every 8-character run of each part).
#[derive(Clone, Debug)]
pub struct Planted {
    /// The family and context, for failure messages (never the secret).
    pub family: String,
    /// The text holding the secret.
    pub text: String,
    /// The secret parts.
    pub secrets: Vec<String>,
}

/// A small deterministic generator (xorshift), so the corpus is the same on every run.
#[derive(Clone, Debug)]
pub struct Gen(u64);

impl Gen {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Gen {
        Gen(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// `n` characters from `alphabet`.
    pub fn pick(&mut self, alphabet: &str, n: usize) -> String {
        let a: Vec<char> = alphabet.chars().collect();
        (0..n)
            .map(|_| a[(self.next() % a.len() as u64) as usize])
            .collect()
    }

    /// `n` base62 characters.
    pub fn b62(&mut self, n: usize) -> String {
        self.pick(B62, n)
    }

    /// `n` lower-case hexadecimal digits.
    pub fn hex(&mut self, n: usize) -> String {
        self.pick("0123456789abcdef", n)
    }

    /// `n` base64 characters.
    pub fn b64(&mut self, n: usize) -> String {
        self.pick(&format!("{B62}+/"), n)
    }

    /// A password: letters, digits and punctuation that is common in passwords.
    pub fn password(&mut self, n: usize) -> String {
        self.pick(&format!("{B62}!#^*_+-"), n)
    }

    /// `n` decimal digits.
    pub fn digits(&mut self, n: usize) -> String {
        self.pick("0123456789", n)
    }
}

const B62: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

fn p(family: &str, text: String, secrets: Vec<String>) -> Planted {
    Planted {
        family: family.to_owned(),
        text,
        secrets,
    }
}

/// Joins parts at run time (vendor prefixes are never written whole in the source).
fn j(parts: &[&str]) -> String {
    parts.concat()
}
