//! The credential corpus: [`credentials`](super::credentials), every shape the redactor must
//! catch, each body drawn in turn from one seeded [`Gen`].

use super::{B62, Gen, Planted, j, p};

/// The corpus [`credentials`](super::credentials) returns.
pub(super) fn all() -> Vec<Planted> {
    let mut g = Gen::new(22);
    let mut out = Vec::new();
    // Vendor tokens: prefix + random body, each written in a sentence of its own.
    let vendor: Vec<(&str, String)> = vec![
        ("stripe-secret", j(&["sk", "_live_"]) + &g.b62(99)),
        ("stripe-restricted", j(&["rk", "_live_"]) + &g.b62(24)),
        ("stripe-test", j(&["sk", "_test_"]) + &g.b62(24)),
        ("stripe-webhook", j(&["wh", "sec_"]) + &g.b62(32)),
        ("npm", j(&["np", "m_"]) + &g.b62(36)),
        (
            "pypi",
            j(&["py", "pi-AgEIcHlwaS5vcmc"]) + &g.pick(&format!("{B62}-_"), 70),
        ),
        (
            "docker-pat",
            j(&["dc", "kr_pat_"]) + &g.pick(&format!("{B62}-_"), 27),
        ),
        (
            "slack-app",
            format!(
                "{}{}-{}-{}",
                j(&["xa", "pp-1-A"]),
                g.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 10),
                g.digits(13),
                g.hex(64)
            ),
        ),
        (
            "slack-bot",
            format!(
                "{}{}-{}-{}",
                j(&["xo", "xb-"]),
                g.digits(11),
                g.digits(13),
                g.b62(24)
            ),
        ),
        (
            "slack-user",
            format!(
                "{}{}-{}-{}-{}",
                j(&["xo", "xp-"]),
                g.digits(11),
                g.digits(12),
                g.digits(13),
                g.hex(32)
            ),
        ),
        ("github-pat", j(&["gh", "p_"]) + &g.b62(36)),
        ("github-oauth", j(&["gh", "o_"]) + &g.b62(36)),
        ("github-server", j(&["gh", "s_"]) + &g.b62(36)),
        (
            "github-fine",
            format!("{}{}_{}", j(&["github", "_pat_"]), g.b62(22), g.b62(59)),
        ),
        (
            "gitlab-pat",
            j(&["gl", "pat-"]) + &g.pick(&format!("{B62}-_"), 20),
        ),
        (
            "openai-project",
            j(&["sk", "-proj-"]) + &g.pick(&format!("{B62}-_"), 120),
        ),
        (
            "anthropic",
            j(&["sk", "-ant-api03-"]) + &g.pick(&format!("{B62}-_"), 93) + "AA",
        ),
        ("huggingface", j(&["h", "f_"]) + &g.b62(34)),
        (
            "aws-access-key",
            j(&["AK", "IA"]) + &g.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
        ),
        (
            "aws-session-key",
            j(&["AS", "IA"]) + &g.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
        ),
        (
            "google-api",
            j(&["AI", "za"]) + &g.pick(&format!("{B62}-_"), 35),
        ),
        (
            "sendgrid",
            format!("{}{}.{}", j(&["S", "G."]), g.b62(22), g.b62(43)),
        ),
        ("shopify", j(&["sh", "pat_"]) + &g.hex(32)),
        ("digitalocean", j(&["do", "p_v1_"]) + &g.hex(64)),
        ("sentry-auth", j(&["sn", "trys_"]) + &g.b62(80)),
        (
            "openai-service-account",
            j(&["sk", "-svcacct-"]) + &g.pick(&format!("{B62}-_"), 100),
        ),
        (
            "openai-admin",
            j(&["sk", "-admin-"]) + &g.pick(&format!("{B62}-_"), 100),
        ),
        (
            "anthropic-admin",
            j(&["sk", "-ant-admin01-"]) + &g.pick(&format!("{B62}-_"), 93) + "AA",
        ),
        ("openrouter", j(&["sk", "-or-v1-"]) + &g.hex(64)),
        ("deepseek-like", j(&["s", "k-"]) + &g.hex(32)),
        ("github-refresh", j(&["gh", "r_"]) + &g.b62(36)),
        ("github-user-to-server", j(&["gh", "u_"]) + &g.b62(36)),
        ("gitlab-runner", j(&["gl", "rt-"]) + &g.b62(20)),
        ("gitlab-deploy", j(&["gl", "dt-"]) + &g.b62(20)),
        ("gitlab-feed", j(&["gl", "ft-"]) + &g.b62(20)),
        ("gitlab-trigger", j(&["gl", "ptt-"]) + &g.hex(40)),
        ("stripe-restricted-test", j(&["rk", "_test_"]) + &g.b62(24)),
        (
            "grafana-service-account",
            j(&["gl", "sa_"]) + &g.b62(32) + "_" + &g.hex(8),
        ),
        ("grafana-cloud", j(&["gl", "c_"]) + &g.b62(60)),
        (
            "postman",
            format!("{}{}-{}", j(&["PM", "AK-"]), g.hex(24), g.hex(34)),
        ),
        ("netlify", j(&["nf", "p_"]) + &g.b62(36)),
        ("supabase", j(&["sb", "p_"]) + &g.hex(40)),
        ("planetscale", j(&["pscale", "_tkn_"]) + &g.b62(43)),
        (
            "square-access",
            j(&["sq0", "atp-"]) + &g.pick(&format!("{B62}-_"), 22),
        ),
        (
            "square-secret",
            j(&["sq0", "csp-"]) + &g.pick(&format!("{B62}-_"), 43),
        ),
        ("shippo", j(&["shippo", "_live_"]) + &g.hex(40)),
        ("flutterwave", j(&["FLW", "SECK-"]) + &g.hex(32) + "-X"),
        ("typeform", j(&["tf", "p_"]) + &g.b62(44)),
        ("pulumi", j(&["pu", "l-"]) + &g.hex(40)),
        ("notion", j(&["sec", "ret_"]) + &g.b62(43)),
        ("fly-io", j(&["fm", "2_"]) + &g.b62(100)),
        ("mailgun", j(&["ke", "y-"]) + &g.hex(32)),
        (
            "langsmith",
            format!("{}{}_{}", j(&["lsv2", "_pt_"]), g.hex(32), g.hex(10)),
        ),
        (
            "pinecone",
            format!("{}{}_{}", j(&["pc", "sk_"]), g.b62(5), g.b62(60)),
        ),
        (
            "figma",
            j(&["fi", "gd_"]) + &g.pick(&format!("{B62}-_"), 40),
        ),
        (
            "contentful",
            j(&["CF", "PAT-"]) + &g.pick(&format!("{B62}-_"), 43),
        ),
        (
            "frameio",
            j(&["fio", "-u-"]) + &g.pick(&format!("{B62}-_"), 64),
        ),
        (
            "age-secret-key",
            j(&["AGE-SECRET", "-KEY-1"]) + &g.pick("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58),
        ),
        ("rubygems", j(&["rubygems", "_"]) + &g.hex(48)),
        (
            "docker-org-token",
            j(&["dc", "kr_oat_"]) + &g.pick(&format!("{B62}-_"), 32),
        ),
        ("readme", j(&["rd", "me_"]) + &g.hex(70)),
        (
            "sourcegraph",
            format!("{}{}_{}", j(&["sg", "p_"]), g.hex(16), g.hex(40)),
        ),
        (
            "scalingo",
            j(&["tk", "-us-"]) + &g.pick(&format!("{B62}-_"), 48),
        ),
        ("prefect", j(&["pn", "u_"]) + &g.b62(36)),
        ("yandex", j(&["y", "0_"]) + &g.pick(&format!("{B62}-_"), 55)),
        ("infracost", j(&["ic", "o-"]) + &g.b62(32)),
        (
            "brevo",
            format!("{}{}-{}", j(&["xkey", "sib-"]), g.hex(64), g.b62(16)),
        ),
        ("authress", j(&["s", "c_"]) + &g.b62(30)),
        ("fireworks", j(&["f", "w_"]) + &g.b62(24)),
        ("elevenlabs", j(&["s", "k_"]) + &g.hex(48)),
        ("cerebras", j(&["cs", "k-"]) + &g.b62(48)),
        ("modal", j(&["a", "k-"]) + &g.b62(22)),
        ("e2b", j(&["e2", "b_"]) + &g.hex(40)),
        (
            "browserbase",
            j(&["bb", "_live_"]) + &g.pick(&format!("{B62}-_"), 27),
        ),
        ("unseen-vercel-like", j(&["vc", "p_"]) + &g.b62(56)),
        // Prefixes no rule of either layer names: the family rule must carry them.
        ("unseen-groq-like", j(&["gs", "k_"]) + &g.b62(52)),
        ("unseen-tavily-like", j(&["tv", "ly-"]) + &g.b62(32)),
        ("unseen-replicate-like", j(&["r", "8_"]) + &g.b62(37)),
        ("unseen-perplexity-like", j(&["pp", "lx-"]) + &g.b62(48)),
        (
            "unseen-nvidia-like",
            j(&["nv", "api-"]) + &g.pick(&format!("{B62}-_"), 64),
        ),
        ("unseen-linear-like", j(&["lin", "_api_"]) + &g.b62(40)),
        (
            "unseen-zapier-like",
            j(&["zp", "ka_"]) + &g.hex(32) + "_" + &g.hex(8),
        ),
        ("unseen-xai-like", j(&["xa", "i-"]) + &g.b62(80)),
        (
            "unseen-runpod-like",
            j(&["rp", "a_"]) + &g.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 40),
        ),
    ];
    for (family, key) in vendor {
        out.push(p(family, format!("the key is {key} for prod"), vec![key]));
    }
    // Webhook URLs and tokens in URLs.
    let slack_hook = format!(
        "{}T{}/B{}/{}",
        j(&["https://hooks.", "slack.com/services/"]),
        g.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 10),
        g.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 10),
        g.b62(24)
    );
    let secret = slack_hook.rsplit('/').next().unwrap().to_owned();
    out.push(p(
        "slack-webhook",
        format!("POST {slack_hook}"),
        vec![secret],
    ));
    let discord = format!(
        "{}{}/{}",
        j(&["https://discord.com/api/", "webhooks/"]),
        g.digits(18),
        g.pick(&format!("{B62}-_"), 68)
    );
    let secret = discord.rsplit('/').next().unwrap().to_owned();
    out.push(p(
        "discord-webhook",
        format!("hook: {discord}"),
        vec![secret],
    ));
    let jwt_b = g.pick(&format!("{B62}-_"), 60);
    let jwt_c = g.pick(&format!("{B62}-_"), 43);
    let jwt = format!("eyJhbGciOiJIUzI1NiJ9.eyJ{jwt_b}.{jwt_c}");
    out.push(p("jwt", format!("id_token {jwt}"), vec![jwt_b, jwt_c]));
    // Key blocks.
    for kind in [
        "RSA PRIVATE KEY",
        "OPENSSH PRIVATE KEY",
        "EC PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY",
        "PRIVATE KEY",
    ] {
        let (a, b) = (g.b64(64), g.b64(40));
        out.push(p(
            &format!("pem-{kind}"),
            format!("cat id\n-----BEGIN {kind}-----\n{a}\n{b}==\n-----END {kind}-----\ndone"),
            vec![a, b],
        ));
    }
    let (a, b) = (g.b64(64), g.b64(64));
    out.push(p(
        "pgp-private",
        format!("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{a}\n{b}\n=AbCd\n-----END PGP PRIVATE KEY BLOCK-----"),
        vec![a, b],
    ));
    let (a, b, mac) = (g.b64(64), g.b64(44), g.hex(64));
    out.push(p(
        "putty",
        format!(
            "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: me\nPublic-Lines: 2\n{}\n{}\nPrivate-Lines: 1\n{a}\n{b}\nPrivate-MAC: {mac}\n",
            g.b64(64),
            g.b64(20)
        ),
        vec![a, b, mac],
    ));
    // URL userinfo.
    let pw = g.password(14);
    let pw_slash = format!("{}/{}", &pw[..6], &pw[6..]);
    out.push(p(
        "url-password-slash",
        format!("DATABASE_URL postgres://app:{pw_slash}@db.internal:5432/prod"),
        vec![pw_slash],
    ));
    let pw = g.password(16);
    let pw_at = format!("{}@{}:{}", &pw[..5], &pw[5..10], &pw[10..]);
    out.push(p(
        "url-password-at",
        format!("mysql://root:{pw_at}@10.0.0.5:3306/shop"),
        vec![pw_at.replace(['@', ':'], "")],
    ));
    let pw = g.password(18);
    out.push(p(
        "url-mongodb",
        format!("mongodb+srv://svc:{pw}@cluster0.abcd.mongodb.net/?retryWrites=true"),
        vec![pw],
    ));
    let pw = g.password(20);
    out.push(p(
        "url-redis",
        format!("REDIS_URL=redis://:{pw}@cache:6379/0"),
        vec![pw],
    ));
    let pw = g.password(15);
    out.push(p(
        "url-amqp",
        format!("amqps://worker:{pw}@mq.example.net/vhost"),
        vec![pw],
    ));
    let dsn = g.hex(32);
    out.push(p(
        "sentry-dsn",
        format!(
            "SENTRY_DSN=https://{dsn}@o{}.ingest.sentry.io/{}",
            g.digits(6),
            g.digits(7)
        ),
        vec![dsn],
    ));
    // Command-line flags.
    let pw = g.password(14);
    out.push(p(
        "flag-curl-u",
        format!("curl -u deploy:{pw} https://ci.example.com/api"),
        vec![pw],
    ));
    let pw = g.password(14);
    out.push(p(
        "flag-curl-user",
        format!("curl --user 'admin:{pw}' -X POST https://h/x"),
        vec![pw],
    ));
    let pw = g.password(12);
    out.push(p(
        "flag-mysql-p",
        format!("mysql -h db -u root -p{pw} shop < dump.sql"),
        vec![pw],
    ));
    let pw = g.password(12);
    out.push(p(
        "flag-sshpass",
        format!("sshpass -p '{pw}' ssh ops@bastion"),
        vec![pw],
    ));
    let pw = g.password(16);
    out.push(p(
        "flag-docker-login",
        format!("docker login -u bot -p {pw} registry.example.com"),
        vec![pw],
    ));
    let pw = g.password(16);
    out.push(p(
        "flag-password-eq",
        format!("./manage.py createsuperuser --password={pw} --noinput"),
        vec![pw],
    ));
    let tk = g.b62(30);
    out.push(p(
        "flag-token-space",
        format!("gh-release upload --token {tk} v1.2.3"),
        vec![tk],
    ));
    let tk = g.b62(30);
    out.push(p(
        "flag-api-key",
        format!("tool --api-key {tk} --verbose"),
        vec![tk],
    ));
    let pw = g.password(18);
    out.push(p(
        "flag-redis-cli",
        format!("redis-cli -h cache -a {pw} ping"),
        vec![pw],
    ));
    // Environment assignments.
    for name in [
        "DB_PASS",
        "STRIPE_KEY",
        "MY_SERVICE_SECRET",
        "PGPASSWORD",
        "OPENAI_API_KEY",
        "GITHUB_TOKEN",
        "SMTP_PASSWORD",
        "JWT_SIGNING_KEY",
        "AWS_SECRET_ACCESS_KEY",
    ] {
        let v = g.password(24);
        out.push(p(
            &format!("env-{name}"),
            format!("export {name}={v}\nnpm start"),
            vec![v],
        ));
    }
    // Azure connection strings and SAS.
    let ak = g.b64(86) + "==";
    out.push(p(
        "azure-account-key",
        format!("DefaultEndpointsProtocol=https;AccountName=store1;AccountKey={ak};EndpointSuffix=core.windows.net"),
        vec![ak.trim_end_matches('=').to_owned()],
    ));
    let sig = g.b62(43);
    out.push(p(
        "azure-sas",
        format!("https://store1.blob.core.windows.net/c/f.txt?sv=2022-11-02&ss=b&srt=o&sp=r&se=2030-01-01&sig={sig}%3D"),
        vec![sig],
    ));
    let sak = g.b64(44);
    out.push(p(
        "azure-shared-access-key",
        format!("Endpoint=sb://bus.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={sak}"),
        vec![sak],
    ));
    // AWS console CSV export and credentials file.
    let id = j(&["AK", "IA"]) + &g.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16);
    let sk = g.b64(40);
    out.push(p(
        "aws-csv",
        format!("User name,Password,Access key ID,Secret access key,Console login link\nci-bot,,{id},{sk},https://123.signin.aws.amazon.com/console\n"),
        vec![id, sk],
    ));
    let sk = g.b64(40);
    out.push(p(
        "aws-credentials-file",
        format!(
            "[default]\naws_access_key_id = {}\naws_secret_access_key = {sk}\n",
            j(&["AK", "IA"]) + &g.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
        ),
        vec![sk],
    ));
    // Name/value pairs.
    let v = g.password(20);
    out.push(p(
        "k8s-env",
        format!(
            "env:\n  - name: DB_PASSWORD\n    value: {v}\n  - name: LOG_LEVEL\n    value: info\n"
        ),
        vec![v],
    ));
    let v = g.password(20);
    out.push(p(
        "k8s-env-json",
        format!(r#"{{"env": [{{"name": "API_TOKEN", "value": "{v}"}}]}}"#),
        vec![v],
    ));
    let v = g.password(20);
    out.push(p(
        "k8s-secret-stringdata",
        format!("kind: Secret\nstringData:\n  password: {v}\n  username: app\n"),
        vec![v],
    ));
    let v = g.password(20);
    out.push(p(
        "yaml-nested",
        format!("database:\n  host: db\n  password: \"{v}\"\n"),
        vec![v],
    ));
    let v = g.password(20);
    out.push(p(
        "terraform-assign",
        format!("resource \"aws_db_instance\" \"db\" {{\n  password = \"{v}\"\n}}"),
        vec![v],
    ));
    let v = g.password(20);
    out.push(p(
        "terraform-variable",
        format!("variable \"db_password\" {{\n  type    = string\n  default = \"{v}\"\n}}"),
        vec![v],
    ));
    let v = g.password(20);
    out.push(p(
        "cloudformation",
        format!(r#"{{"ParameterKey": "DbPassword", "ParameterValue": "{v}"}}"#),
        vec![v],
    ));
    let v = g.b62(32);
    out.push(p(
        "json-api-key",
        format!(r#"{{"api_key": "{v}", "model": "gpt"}}"#),
        vec![v],
    ));
    let v = j(&["np", "m_"]) + &g.b62(36);
    out.push(p(
        "npmrc",
        format!("//registry.npmjs.org/:_authToken={v}\n"),
        vec![v],
    ));
    let v = g.b62(40);
    out.push(p(
        "ini-secret",
        format!("[auth]\nclient_secret = {v}\n"),
        vec![v],
    ));
    let (a, b) = (g.b64(64), g.b64(64));
    out.push(p(
        "gcp-service-account",
        format!(r#"{{"type": "service_account", "private_key_id": "{}", "private_key": "-----BEGIN PRIVATE KEY-----\n{a}\n{b}\n-----END PRIVATE KEY-----\n"}}"#, g.hex(40)),
        vec![a, b],
    ));
    let v = g.password(22);
    out.push(p(
        "env-file",
        format!("# .env\nNODE_ENV=production\nDATABASE_PASSWORD={v}\nPORT=3000\n"),
        vec![v],
    ));
    let v = g.b64(40);
    out.push(p(
        "docker-config-auth",
        format!(r#"{{"auths": {{"ghcr.io": {{"auth": "{v}"}}}}}}"#),
        vec![v],
    ));
    let v = g.password(18);
    out.push(p(
        "netrc",
        format!("machine api.example.com\n  login deploy\n  password {v}\n"),
        vec![v],
    ));
    let v = g.password(18);
    out.push(p(
        "java-properties",
        format!("spring.datasource.password={v}\nspring.datasource.url=jdbc:x"),
        vec![v],
    ));
    let v = g.password(18);
    out.push(p("php-array", format!("'password' => '{v}',"), vec![v]));
    let v = g.password(18);
    out.push(p(
        "xml-element",
        format!("<datasource><password>{v}</password></datasource>"),
        vec![v],
    ));
    let v = g.b62(36);
    out.push(p(
        "git-credential-url",
        format!("git clone https://x-access-token:{v}@github.com/org/repo.git"),
        vec![v],
    ));
    // Headers.
    let v = g.pick(&format!("{B62}._-"), 40);
    out.push(p(
        "bearer-opaque",
        format!("curl -H 'Authorization: Bearer {v}' https://api"),
        vec![v],
    ));
    let v = g.b64(28);
    out.push(p(
        "basic-header",
        format!("Authorization: Basic {v}=="),
        vec![v],
    ));
    let v = g.hex(40);
    out.push(p(
        "token-header",
        format!("Authorization: token {v}"),
        vec![v],
    ));
    let v = g.b62(32);
    out.push(p(
        "x-api-key-header",
        format!("-H \"x-api-key: {v}\""),
        vec![v],
    ));
    // CJK and full-width punctuation.
    let v = g.password(16);
    out.push(p(
        "cjk-fullwidth-colon",
        format!("数据库密码 password：{v} 请保管"),
        vec![v],
    ));
    let v = g.b62(24);
    out.push(p(
        "cjk-glued-assignment",
        format!("使用token={v}登录"),
        vec![v],
    ));
    let v = j(&["AK", "IA"]) + &g.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16);
    out.push(p("cjk-glued-key", format!("密钥{v}是生产环境的"), vec![v]));
    let v = g.password(16);
    out.push(p("fullwidth-equals", format!("SECRET＝{v}"), vec![v]));
    // Escapes and encodings.
    let v = g.password(18);
    out.push(p(
        "json-escaped-thrice",
        format!(r#"{{\\\"password\\\": \\\"{v}\\\"}}"#),
        vec![v],
    ));
    let body = g.b62(48);
    out.push(p(
        "unicode-escape-prefix",
        format!(r#"{{"content": "\u0073k-proj-{body}"}}"#),
        vec![body],
    ));
    let v = g.password(18);
    out.push(p(
        "percent-encoded-assignment",
        format!("GET /login?user=bob&password%3D{v} HTTP/1.1"),
        vec![v],
    ));
    let v = g.b62(30);
    out.push(p(
        "percent-encoded-token",
        format!("https://h/cb?access_token={v}&state=1"),
        vec![v],
    ));
    let v = g.password(20);
    let enc: String = v.bytes().map(|b| format!("%{b:02X}")).collect();
    out.push(p(
        "percent-encoded-everything",
        format!("body=api_key%3D{enc}"),
        vec![v],
    ));
    out
}
