//! A2A push notifications: webhook configurations per task, and their delivery when the task
//! ends or waits for input (the task as a `StreamResponse`, posted by the server's webhook
//! sender: signed under its webhook secret, within the server's outbound policy, retried; plus
//! A2A's `X-A2A-Notification-Token` and the configuration's `Authorization`, which is never
//! sent to a host the operator's exceptions let through: a config that would is refused).

use std::collections::HashMap;
use std::sync::Mutex;

use agentweave_a2a::rpc::RpcError;
use agentweave_a2a::wire::{StreamResponse, Task, TaskPushNotificationConfig};
use agentweave_runtime::outbound::OutboundPolicy;

/// The most webhook configurations one task keeps.
pub(crate) const MAX_PER_TASK: usize = 8;

/// The push-notification configurations of this process's tasks, by task key.
pub(crate) struct PushConfigs {
    /// The server's webhook secret; without one, no push notifications.
    secret: Option<Vec<u8>>,
    /// What the notifications may reach.
    outbound: OutboundPolicy,
    by_task: Mutex<HashMap<String, Vec<TaskPushNotificationConfig>>>,
}

impl PushConfigs {
    /// Configurations signed under `secret` (none: the server sends no push notifications),
    /// sent within `outbound`.
    pub(crate) fn new(secret: Option<Vec<u8>>, outbound: OutboundPolicy) -> Self {
        PushConfigs {
            secret,
            outbound,
            by_task: Mutex::default(),
        }
    }

    /// Whether this server sends push notifications.
    pub(crate) fn enabled(&self) -> bool {
        self.secret.is_some()
    }

    /// Adds (or, for the same id, replaces) `config` of the task under `key`; names it if it
    /// has no id. Refused without a webhook secret, for a URL that is not `http(s)`, or past
    /// [`MAX_PER_TASK`] configurations.
    pub(crate) fn set(
        &self,
        key: &str,
        mut config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, RpcError> {
        self.check(&config)?;
        if config.id.is_empty() {
            config.id = super::map::new_id();
        }
        let mut all = self.by_task.lock().expect("push lock");
        let list = all.entry(key.to_owned()).or_default();
        list.retain(|c| c.id != config.id);
        if list.len() >= MAX_PER_TASK {
            return Err(RpcError::InvalidParams(format!(
                "task '{}' has {MAX_PER_TASK} push-notification configs already: delete one first",
                config.task_id
            )));
        }
        list.push(config.clone());
        Ok(config)
    }

    /// Whether `config` could be set: a webhook secret, a URL the outbound policy permits, an
    /// `Authorization` only to a URL the strict policy permits, an id of at most 64 bytes and
    /// a token of at most 1024.
    pub(crate) fn check(&self, config: &TaskPushNotificationConfig) -> Result<(), RpcError> {
        if !self.enabled() {
            return Err(RpcError::PushNotificationNotSupported);
        }
        let url = crate::webhooks::check_url(&self.outbound, &config.url)
            .map_err(|e| RpcError::InvalidParams(e.to_string()))?;
        if credentials(config).is_some() {
            self.outbound
                .check_credentials_to(&url)
                .map_err(|e| RpcError::InvalidParams(e.to_string()))?;
        }
        if config.id.len() > 64 || config.token.len() > 1024 {
            return Err(RpcError::InvalidParams(
                "a push-notification config id is at most 64 bytes and its token 1024".into(),
            ));
        }
        Ok(())
    }

    /// The configurations of the task under `key`.
    pub(crate) fn list(&self, key: &str) -> Vec<TaskPushNotificationConfig> {
        if !self.enabled() {
            return Vec::new();
        }
        let all = self.by_task.lock().expect("push lock");
        all.get(key).cloned().unwrap_or_default()
    }

    /// Deletes configuration `id` of the task under `key`; whether it was there.
    pub(crate) fn delete(&self, key: &str, id: &str) -> bool {
        let mut all = self.by_task.lock().expect("push lock");
        let Some(list) = all.get_mut(key) else {
            return false;
        };
        let before = list.len();
        list.retain(|c| c.id != id);
        before != list.len()
    }

    /// Posts `task` to every webhook of the task under `key`, each delivery in a task of its
    /// own.
    pub(crate) fn notify(&self, key: &str, task: &Task) {
        let Some(secret) = &self.secret else {
            return;
        };
        let configs = self.list(key);
        if configs.is_empty() {
            return;
        }
        let body = serde_json::to_vec(&StreamResponse::task(task.clone())).unwrap_or_default();
        if body.len() > crate::webhooks::MAX_BODY {
            tracing::warn!(task = %task.id, bytes = body.len(), "a task too large to push");
            return;
        }
        for config in configs {
            let Ok(url) = reqwest::Url::parse(&config.url) else {
                continue;
            };
            let mut headers = Vec::new();
            if !config.token.is_empty() {
                headers.push(("x-a2a-notification-token", config.token.clone()));
            }
            if let Some(auth) = credentials(&config) {
                headers.push(("authorization", auth));
            }
            let (secret, body, what) = (secret.clone(), body.clone(), task.id.clone());
            let (policy, tenant) = (
                self.outbound.clone(),
                crate::webhooks::tenant_of(key).to_owned(),
            );
            tokio::spawn(async move {
                crate::webhooks::deliver(&policy, &tenant, url, &secret, body, headers, &what)
                    .await;
            });
        }
    }
}

/// The `Authorization` value `config` asks for, if any.
fn credentials(config: &TaskPushNotificationConfig) -> Option<String> {
    let auth = config.authentication.as_ref()?;
    (!auth.scheme.is_empty() && !auth.credentials.is_empty())
        .then(|| format!("{} {}", auth.scheme, auth.credentials))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(id: &str, url: &str) -> TaskPushNotificationConfig {
        TaskPushNotificationConfig {
            id: id.into(),
            task_id: "c.0".into(),
            url: url.into(),
            ..TaskPushNotificationConfig::default()
        }
    }

    #[test]
    fn configs_need_a_secret_an_http_url_and_room() {
        let loopback = OutboundPolicy::default().allow_net("127.0.0.0/8").unwrap();
        let off = PushConfigs::new(None, loopback.clone());
        assert!(matches!(
            off.set("k", config("a", "http://127.0.0.1:9/hook")),
            Err(RpcError::PushNotificationNotSupported)
        ));
        let on = PushConfigs::new(Some(b"secret".to_vec()), loopback);
        assert!(on.set("k", config("a", "file:///etc/passwd")).is_err());
        let named = on.set("k", config("", "http://127.0.0.1:9/hook")).unwrap();
        assert!(!named.id.is_empty());
        on.set("k", config("a", "http://127.0.0.1:9/a")).unwrap();
        on.set("k", config("a", "http://127.0.0.1:9/b")).unwrap();
        assert_eq!(on.list("k").len(), 2, "the same id replaces");
        for k in 0..MAX_PER_TASK - 2 {
            on.set("k", config(&format!("x{k}"), "http://127.0.0.1:9/x"))
                .unwrap();
        }
        assert!(on
            .set("k", config("one-too-many", "http://127.0.0.1:9/x"))
            .is_err());
        assert!(on.delete("k", "a"));
        assert!(!on.delete("k", "a"));
        assert!(on.list("other").is_empty());
    }
}
