use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::DomainError;

/// A content locale code such as `en` or `pt-BR` (a BCP 47 language tag restricted to the simple
/// `language(-subtag)*` form, which is what locale maps are keyed by).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct LocaleCode(String);

impl LocaleCode {
    /// # Errors
    /// When `raw` is not `[a-z]{2,3}` optionally followed by `-` subtags of 2 to 8 alphanumerics.
    pub fn parse(raw: &str) -> Result<Self, DomainError> {
        let mut parts = raw.split('-');
        let lang_ok = parts.next().is_some_and(|l| {
            (2..=3).contains(&l.len()) && l.bytes().all(|b| b.is_ascii_lowercase())
        });
        let rest_ok = parts
            .all(|p| (2..=8).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_alphanumeric()));
        if lang_ok && rest_ok && raw.len() <= 35 {
            Ok(Self(raw.to_owned()))
        } else {
            Err(DomainError::InvalidLocale(raw.to_owned()))
        }
    }

    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for LocaleCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for LocaleCode {
    type Error = DomainError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<LocaleCode> for String {
    fn from(value: LocaleCode) -> Self {
        value.0
    }
}

/// The project's enabled content locales and its default. Once built, the default is always one of
/// the enabled locales, so fallback never has to handle "no default".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentLocales {
    enabled: Vec<LocaleCode>,
    default: LocaleCode,
}

impl ContentLocales {
    /// # Errors
    /// When the list is empty, has duplicates or invalid codes, or the default is not enabled.
    pub fn new<S: AsRef<str>>(enabled: &[S], default: &str) -> Result<Self, DomainError> {
        if enabled.is_empty() {
            return Err(DomainError::InvalidLocales(
                "at least one content locale is required".into(),
            ));
        }
        let mut list = Vec::with_capacity(enabled.len());
        for raw in enabled {
            let code = LocaleCode::parse(raw.as_ref())?;
            if list.contains(&code) {
                return Err(DomainError::InvalidLocales(format!(
                    "locale \"{code}\" is listed twice"
                )));
            }
            list.push(code);
        }
        let default = LocaleCode::parse(default)?;
        if !list.contains(&default) {
            return Err(DomainError::InvalidLocales(format!(
                "default locale \"{default}\" is not one of the enabled locales"
            )));
        }
        Ok(Self {
            enabled: list,
            default,
        })
    }

    /// A single-locale project, the state of a fresh installation.
    #[must_use]
    pub fn single(code: LocaleCode) -> Self {
        Self {
            enabled: vec![code.clone()],
            default: code,
        }
    }

    #[must_use]
    pub fn enabled(&self) -> &[LocaleCode] {
        &self.enabled
    }

    #[must_use]
    pub fn default_locale(&self) -> &LocaleCode {
        &self.default
    }

    #[must_use]
    pub fn is_enabled(&self, code: &str) -> bool {
        self.enabled.iter().any(|l| l.as_str() == code)
    }

    /// Resolves the `locale` query parameter: absent means the default locale.
    ///
    /// # Errors
    /// When the code is malformed or not an enabled locale (the API answers 422).
    pub fn resolve(&self, requested: Option<&str>) -> Result<LocaleCode, DomainError> {
        match requested {
            None => Ok(self.default.clone()),
            Some(raw) => self
                .enabled
                .iter()
                .find(|l| l.as_str() == raw)
                .cloned()
                .ok_or_else(|| DomainError::InvalidLocale(raw.to_owned())),
        }
    }

    /// Picks a translation from a stored locale map: the requested locale, else the default
    /// locale, else null. Never another locale: showing German to an English reader when the
    /// English and default translations are missing would be a surprise, not a fallback.
    #[must_use]
    pub fn pick<'a>(&self, map: &'a Map<String, Value>, locale: &LocaleCode) -> Option<&'a Value> {
        map.get(locale.as_str())
            .filter(|v| !v.is_null())
            .or_else(|| map.get(self.default.as_str()).filter(|v| !v.is_null()))
    }
}

/// How a read wants translatable values: flattened to one locale (with fallback to the default
/// locale), or as full locale maps (`include_all_translations=true`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocaleSelection {
    Flatten(LocaleCode),
    AllTranslations,
}

/// A localized settings text (`display_name`, `note`, `placeholder`, `validation_message`): a map
/// keyed by content locale, or a plain string that applies to every locale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalizedText {
    Plain(String),
    Map(BTreeMap<LocaleCode, String>),
}

impl LocalizedText {
    /// # Errors
    /// When the value is neither a string nor an object of locale code to string.
    pub fn from_json(value: &Value) -> Result<Self, String> {
        match value {
            Value::String(s) => Ok(Self::Plain(s.clone())),
            Value::Object(map) => {
                let mut out = BTreeMap::new();
                for (k, v) in map {
                    let code = LocaleCode::parse(k).map_err(|e| e.to_string())?;
                    match v {
                        Value::String(s) => {
                            out.insert(code, s.clone());
                        }
                        Value::Null => {}
                        _ => return Err(format!("the \"{k}\" text must be a string")),
                    }
                }
                Ok(Self::Map(out))
            }
            _ => Err("must be a string or a map of locale to string".into()),
        }
    }

    /// The text for `locale`, falling back to the default locale, then to any translation.
    #[must_use]
    pub fn resolve(&self, locale: &LocaleCode, locales: &ContentLocales) -> Option<&str> {
        match self {
            Self::Plain(s) => Some(s.as_str()),
            Self::Map(map) => map
                .get(locale)
                .or_else(|| map.get(locales.default_locale()))
                .or_else(|| map.values().next())
                .map(String::as_str),
        }
    }

    /// Locale keys that are not enabled in the project (the spec keys these maps by enabled
    /// locales; a manifest check reports them).
    #[must_use]
    pub fn unknown_locales(&self, locales: &ContentLocales) -> Vec<LocaleCode> {
        match self {
            Self::Plain(_) => Vec::new(),
            Self::Map(map) => map
                .keys()
                .filter(|k| !locales.is_enabled(k.as_str()))
                .cloned()
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn en_de() -> ContentLocales {
        ContentLocales::new(&["en", "de"], "en").unwrap()
    }

    #[test]
    fn locale_codes() {
        for ok in ["en", "de", "pt-BR", "zh-Hant-TW", "gsw"] {
            assert!(LocaleCode::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["", "e", "EN", "en_US", "english", "en-", "-en", "en-x"] {
            assert!(LocaleCode::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn content_locales_rules() {
        assert!(ContentLocales::new::<&str>(&[], "en").is_err());
        assert!(ContentLocales::new(&["en", "en"], "en").is_err());
        assert!(ContentLocales::new(&["en"], "de").is_err());
        assert!(ContentLocales::new(&["EN"], "EN").is_err());
        let l = en_de();
        assert_eq!(l.default_locale().as_str(), "en");
        assert_eq!(l.resolve(None).unwrap().as_str(), "en");
        assert_eq!(l.resolve(Some("de")).unwrap().as_str(), "de");
        assert!(l.resolve(Some("fr")).is_err());
        assert!(l.resolve(Some("DE")).is_err());
    }

    #[test]
    fn pick_falls_back_to_default_only() {
        let l = ContentLocales::new(&["en", "de", "fr"], "en").unwrap();
        let de = LocaleCode::parse("de").unwrap();
        let map = json!({"en": "Hello", "de": "Hallo"});
        let map = map.as_object().unwrap();
        assert_eq!(l.pick(map, &de), Some(&json!("Hallo")));
        let fr = LocaleCode::parse("fr").unwrap();
        assert_eq!(l.pick(map, &fr), Some(&json!("Hello")));
        let only_de = json!({"de": "Hallo"});
        assert_eq!(l.pick(only_de.as_object().unwrap(), &fr), None);
        let null_fr = json!({"fr": null, "en": "Hi"});
        assert_eq!(
            l.pick(null_fr.as_object().unwrap(), &fr),
            Some(&json!("Hi"))
        );
    }

    #[test]
    fn localized_text() {
        let l = en_de();
        let de = LocaleCode::parse("de").unwrap();
        let t = LocalizedText::from_json(&json!({"en": "Title", "de": "Titel"})).unwrap();
        assert_eq!(t.resolve(&de, &l), Some("Titel"));
        let t = LocalizedText::from_json(&json!({"en": "Title"})).unwrap();
        assert_eq!(t.resolve(&de, &l), Some("Title"));
        let t = LocalizedText::from_json(&json!("Title")).unwrap();
        assert_eq!(t.resolve(&de, &l), Some("Title"));
        assert!(LocalizedText::from_json(&json!(3)).is_err());
        assert!(LocalizedText::from_json(&json!({"EN": "x"})).is_err());
        assert!(LocalizedText::from_json(&json!({"en": 1})).is_err());
        let t = LocalizedText::from_json(&json!({"en": "a", "fr": "b"})).unwrap();
        assert_eq!(
            t.unknown_locales(&l),
            vec![LocaleCode::parse("fr").unwrap()]
        );
    }
}
