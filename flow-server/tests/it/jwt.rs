//! JWT bearer authentication: tokens signed with HS256, ES256 and RS256 by keys of a JWKS
//! document; issuer, audience and expiry checked; scopes and tenant from claims.

use crate::common;

use agentweave_runtime::InMemoryStore;
use agentweave_server::{AppState, Auth, JwtAuth};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use common::spawn;
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

const ISS: &str = "https://id.example";
const AUD: &str = "helpdesk";
const SECRET: &[u8] = b"a-shared-hmac-secret-of-32-bytes!";

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn claims(sub: &str, scope: Value) -> Value {
    json!({"sub": sub, "iss": ISS, "aud": AUD, "exp": now() + 600, "scope": scope, "org": "acme"})
}

fn hs256(claims: &Value) -> String {
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("hmac".into());
    encode(&header, claims, &EncodingKey::from_secret(SECRET)).unwrap()
}

/// An ES256 key pair: the encoding key and its public JWK.
fn es256_pair() -> (EncodingKey, Value) {
    use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let public = pair.public_key().as_ref();
    let jwk = json!({
        "kty": "EC", "crv": "P-256", "kid": "ec", "alg": "ES256",
        "x": URL_SAFE_NO_PAD.encode(&public[1..33]),
        "y": URL_SAFE_NO_PAD.encode(&public[33..65]),
    });
    (EncodingKey::from_ec_der(pkcs8.as_ref()), jwk)
}

/// An RS256 key pair made with the `openssl` command: the encoding key and its public JWK.
fn rs256_pair() -> Option<(EncodingKey, Value)> {
    let dir = std::env::temp_dir().join(format!("af-jwt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key = dir.join("rsa.pem");
    let made = std::process::Command::new("openssl")
        .args(["genrsa", "-out"])
        .arg(&key)
        .arg("2048")
        .output()
        .ok()?;
    if !made.status.success() {
        return None;
    }
    let modulus = std::process::Command::new("openssl")
        .args(["rsa", "-noout", "-modulus", "-in"])
        .arg(&key)
        .output()
        .ok()?;
    let text = String::from_utf8(modulus.stdout).ok()?;
    let hex = text.trim().strip_prefix("Modulus=")?;
    let n: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    let pem = std::fs::read(&key).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let jwk = json!({
        "kty": "RSA", "kid": "rsa", "alg": "RS256",
        "n": URL_SAFE_NO_PAD.encode(n), "e": "AQAB",
    });
    Some((EncodingKey::from_rsa_pem(&pem).unwrap(), jwk))
}

fn jwks(extra: &[Value]) -> String {
    let mut keys = vec![json!({"kty": "oct", "kid": "hmac", "k": URL_SAFE_NO_PAD.encode(SECRET)})];
    keys.extend_from_slice(extra);
    json!({ "keys": keys }).to_string()
}

fn state(jwks: &str) -> AppState {
    let jwt = JwtAuth::from_jwks(jwks, ISS, AUD)
        .unwrap()
        .tenant_claim("org");
    AppState::builder(InMemoryStore::new())
        .flow("desk", agentweave_server::demo::desk())
        .auth(Auth::jwt(jwt))
        .build()
        .unwrap()
}

async fn status(base: &str, token: &str, method: &str, path: &str) -> u16 {
    let client = reqwest::Client::new();
    let request = match method {
        "GET" => client.get(format!("{base}{path}")),
        _ => client
            .post(format!("{base}{path}"))
            .json(&json!({"message": "hi"})),
    };
    request
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn hs256_tokens_are_checked_for_issuer_audience_expiry_and_scopes() {
    let server = spawn(state(&jwks(&[]))).await;
    let base = &server.base;
    let good = hs256(&claims("ana", json!("read chat")));
    assert_eq!(status(base, &good, "GET", "/v1/flows").await, 200);
    assert_eq!(
        status(base, &good, "POST", "/v1/flows/desk/threads/t/turns").await,
        200
    );
    // Scopes as an array; without `chat`, no turn.
    let reader = hs256(&claims("rita", json!(["read"])));
    assert_eq!(status(base, &reader, "GET", "/v1/flows").await, 200);
    assert_eq!(
        status(base, &reader, "POST", "/v1/flows/desk/threads/t2/turns").await,
        403
    );
    // Each broken claim is 401.
    let mut broken = Vec::new();
    for (field, value) in [
        ("iss", json!("https://evil.example")),
        ("aud", json!("another-service")),
        ("exp", json!(now() - 3600)),
    ] {
        let mut c = claims("ana", json!("read"));
        c[field] = value;
        broken.push(hs256(&c));
    }
    let mut no_exp = claims("ana", json!("read"));
    no_exp.as_object_mut().unwrap().remove("exp");
    broken.push(hs256(&no_exp));
    let forged = encode(
        &Header::new(Algorithm::HS256),
        &claims("ana", json!("admin")),
        &EncodingKey::from_secret(b"another-secret-another-secret-!!"),
    )
    .unwrap();
    broken.push(forged);
    broken.push("not-a-jwt-at-all-0123456789".into());
    for token in &broken {
        assert_eq!(
            status(base, token, "GET", "/v1/flows").await,
            401,
            "{token}"
        );
    }
}

#[tokio::test]
async fn the_tenant_claim_separates_threads() {
    let server = spawn(state(&jwks(&[]))).await;
    let base = &server.base;
    let ana = hs256(&claims("ana", json!("read chat")));
    assert_eq!(
        status(base, &ana, "POST", "/v1/flows/desk/threads/t/turns").await,
        200
    );
    assert_eq!(
        status(base, &ana, "GET", "/v1/flows/desk/threads/t").await,
        200
    );
    let mut other = claims("gus", json!("read chat"));
    other["org"] = json!("globex");
    let gus = hs256(&other);
    assert_eq!(
        status(base, &gus, "GET", "/v1/flows/desk/threads/t").await,
        404
    );
}

#[tokio::test]
async fn es256_and_rs256_keys_of_the_jwks_verify_their_tokens() {
    let (ec_key, ec_jwk) = es256_pair();
    let rsa = rs256_pair();
    if rsa.is_none() {
        agentweave_runtime::testing::skip_missing_component(
            "the openssl command",
            "install openssl to make an RSA key for the RS256 case",
        );
    }
    let mut extra = vec![ec_jwk];
    if let Some((_, jwk)) = &rsa {
        extra.push(jwk.clone());
    }
    let server = spawn(state(&jwks(&extra))).await;
    let base = &server.base;
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("ec".into());
    let es = encode(&header, &claims("ana", json!("read")), &ec_key).unwrap();
    assert_eq!(status(base, &es, "GET", "/v1/flows").await, 200);
    // The same claims signed with HS256 under the EC key's id: refused (no such key).
    let mut confused = Header::new(Algorithm::HS256);
    confused.kid = Some("ec".into());
    let confused = encode(
        &confused,
        &claims("ana", json!("read")),
        &EncodingKey::from_secret(SECRET),
    )
    .unwrap();
    assert_eq!(status(base, &confused, "GET", "/v1/flows").await, 401);
    if let Some((rsa_key, _)) = rsa {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some("rsa".into());
        let rs = encode(&header, &claims("ana", json!("read")), &rsa_key).unwrap();
        assert_eq!(status(base, &rs, "GET", "/v1/flows").await, 200);
    }
}

#[test]
fn a_jwks_with_an_unaccepted_algorithm_is_refused_at_configuration() {
    let jwks = json!({"keys": [{"kty": "oct", "alg": "HS512", "k": "c2VjcmV0"}]}).to_string();
    let e = JwtAuth::from_jwks(&jwks, ISS, AUD).unwrap_err();
    assert!(e.to_string().contains("HS256"), "{e}");
    assert!(JwtAuth::from_jwks(r#"{"keys": []}"#, ISS, AUD).is_err());
}

/// `claims` with `field` set to `now() + offset` (a negative offset is in the past).
fn at(field: &str, offset: i64) -> String {
    let mut c = claims("ana", json!("read"));
    c[field] = json!(now().checked_add_signed(offset).unwrap());
    hs256(&c)
}

#[tokio::test]
async fn nbf_is_checked_with_the_leeway() {
    let server = spawn(state(&jwks(&[]))).await;
    let base = &server.base;
    let year = 365 * 24 * 3600;
    assert_eq!(
        status(base, &at("nbf", year), "GET", "/v1/flows").await,
        401,
        "valid only from next year"
    );
    assert_eq!(
        status(base, &at("nbf", 120), "GET", "/v1/flows").await,
        401,
        "beyond the 30 s leeway"
    );
    assert_eq!(
        status(base, &at("nbf", 10), "GET", "/v1/flows").await,
        200,
        "within the leeway"
    );
    assert_eq!(
        status(base, &at("nbf", -60), "GET", "/v1/flows").await,
        200,
        "already valid"
    );
}

#[tokio::test]
async fn exp_is_checked_with_the_leeway() {
    let server = spawn(state(&jwks(&[]))).await;
    let base = &server.base;
    assert_eq!(
        status(base, &at("exp", -3600), "GET", "/v1/flows").await,
        401,
        "an hour ago"
    );
    assert_eq!(
        status(base, &at("exp", -120), "GET", "/v1/flows").await,
        401,
        "beyond the leeway"
    );
    assert_eq!(
        status(base, &at("exp", -10), "GET", "/v1/flows").await,
        200,
        "within the leeway"
    );
}

#[tokio::test]
async fn iat_in_the_future_is_refused_with_the_leeway() {
    let server = spawn(state(&jwks(&[]))).await;
    let base = &server.base;
    assert_eq!(
        status(base, &at("iat", 365 * 24 * 3600), "GET", "/v1/flows").await,
        401,
        "issued next year"
    );
    assert_eq!(
        status(base, &at("iat", 120), "GET", "/v1/flows").await,
        401,
        "beyond the leeway"
    );
    assert_eq!(
        status(base, &at("iat", 10), "GET", "/v1/flows").await,
        200,
        "within the leeway"
    );
    assert_eq!(
        status(base, &at("iat", -60), "GET", "/v1/flows").await,
        200,
        "issued a minute ago"
    );
    let mut text = claims("ana", json!("read"));
    text["iat"] = json!("yesterday");
    assert_eq!(
        status(base, &hs256(&text), "GET", "/v1/flows").await,
        401,
        "not a number"
    );
}
