//! The look-alike corpus: [`benign`](super::benign), text that names or resembles secrets and
//! must pass unchanged.

use super::Gen;

/// The corpus [`benign`](super::benign) returns.
pub(super) fn all() -> Vec<String> {
    let mut g = Gen::new(7);
    let mut v: Vec<String> = [
        r#"SECRET_KEY = os.environ["SECRET_KEY"]"#,
        "git checkout -b feature/sk-payment-integration-v2",
        r#"{"tokenizer": "cl100k_base", "max_tokens": 4096}"#,
        r#"{"access_token": "[REDACTED]", "token_type": "bearer", "expires_in": 3600}"#,
        r#"api_key_env = "OPENAI_API_KEY""#,
        "secretName: db-credentials",
        "password_min_length: twelve",
        "function verifyPassword(password: string): boolean {",
        "fn login(user: &str, password: &str) -> Result<Session> {",
        "let token: String = fetch_token(&client).await?;",
        "client = OpenAI(api_key=api_key)",
        "api_key = settings.OPENAI_API_KEY",
        "const key = process.env.STRIPE_SECRET_KEY;",
        "password = getpass.getpass()",
        "if token == expected_token:",
        "export GITHUB_TOKEN=$GH_TOKEN",
        "password: ${{ secrets.DB_PASSWORD }}",
        "Authorization: Bearer $TOKEN",
        "existingSecret: my-app-secret",
        "API_KEY=your-api-key-here",
        "token_url: https://oauth2.googleapis.com/token",
        "AUTH_METHOD=oauth",
        "--token-file ~/.config/tool/token --password-stdin",
        "mkdir -p build/dist && cargo test -p compaction-core && ssh -p 2222 host",
        "mysql -h db -u root -p shop",
        "PWD=/home/user/projects/app",
        "git@github.com:org/repo.git and ssh://git@host/x and https://user@example.com/",
        "https://github.com/org/repo/blob/main/docs/a@b.md",
        "postgres://localhost:5432/app",
        "mailto:first.last+tag@example.co.uk",
        "max_tokens=4096, tokens_before: 120, password: true, token: null",
        "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
        "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
        "x86_64-unknown-linux-gnu and aarch64-apple-darwin",
        "com.example.auth.TokenRefreshService2Impl",
        "test_redaction_keeps_prefixed_identifiers_like_sk_payment_v2",
        "itShouldRejectInvalidCredentialsWithStatus401",
        "passthrough=true bypass_cache=yes author: Jane keyboard: us",
        "Rotate the API key every 90 days; the token expires after an hour.",
        "password_reset_token_ttl: 3600",
        "**Password**: at least 12 characters",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    v.push(format!("commit {}\nAuthor: A <a@b.c>", g.hex(40)));
    v.push(format!(
        "id {}-{}-{}-{}-{} ok",
        g.hex(8),
        g.hex(4),
        g.hex(4),
        g.hex(4),
        g.hex(12)
    ));
    v.push(format!(
        "GUID {{{}-{}-{}-{}-{}}}",
        g.hex(8).to_uppercase(),
        g.hex(4).to_uppercase(),
        g.hex(4).to_uppercase(),
        g.hex(4).to_uppercase(),
        g.hex(12).to_uppercase()
    ));
    v.push(format!("sha1 {}", g.hex(40).to_uppercase()));
    v.push(format!("image: registry:5000@sha256:{}", g.hex(64)));
    v.push(format!(
        "docker pull registry.local:5000/team/app@sha256:{}",
        g.hex(64)
    ));
    v.push(format!("\"integrity\": \"sha512-{}==\"", g.b64(86)));
    v.push(format!("checksum = \"{}\"", g.hex(64)));
    v.push(format!(
        "\"resolved\": \"https://registry.yarnpkg.com/left-pad/-/left-pad-1.3.0.tgz#{}\"",
        g.hex(40)
    ));
    v.push(format!(
        "/home/user/projects/hermes/target/debug/deps/libcompaction_core-{}.rlib",
        g.hex(16)
    ));
    v.push("node_modules/.pnpm/@types+node@20.11.5/node_modules/@types/node/index.d.ts".to_owned());
    v.push(format!(
        "go: downloading example.com/mod v0.0.0-20231010123456-{}",
        g.hex(12)
    ));
    v.push(format!("\"tool_call_id\": \"call_{}\"", g.b62(24)));
    v.push(format!("\"id\": \"toolu_01{}\"", g.b62(22)));
    v.push(format!("\"id\": \"chatcmpl-{}\"", g.b62(29)));
    v.push(format!(
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{} me@host",
        g.b64(43)
    ));
    v.push(format!(
        "![x](data:image/png;base64,iVBORw0KGgo{}==)",
        g.b64(120)
    ));
    v
}
