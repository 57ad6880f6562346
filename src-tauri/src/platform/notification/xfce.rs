//! Xfce's do-not-disturb: xfce4-notifyd keeps it in xfconf, channel `xfce4-notifyd`,
//! property `/do-not-disturb` (a bool; unset means off), and xfconfd says every change with
//! its `PropertyChanged` signal. The server itself swallows popups while it is on (Notify
//! still returns an id), so the app must know it to hold them back and sum them up later.

use zbus::{Connection, MatchRule, Message};

/// xfconfd's bus name, object and interface.
const XFCONF: &str = "org.xfce.Xfconf";
const XFCONF_PATH: &str = "/org/xfce/Xfconf";
pub const CHANNEL: &str = "xfce4-notifyd";
pub const PROPERTY: &str = "/do-not-disturb";
/// How the app's log and its policy name this source.
pub const SOURCE: &str = "xfce4-notifyd /do-not-disturb";

/// Every change xfconfd announces on xfce4-notifyd's channel (the property is picked out in
/// [`changed`]: xfconf has no match on a signal's second argument alone that saves much).
pub fn changes_rule() -> zbus::Result<MatchRule<'static>> {
    MatchRule::builder()
        .msg_type(zbus::message::Type::Signal)
        .sender(XFCONF)
        .interface(XFCONF)
        .path(XFCONF_PATH)
        .arg(0, CHANNEL)
        .build()
}

/// The state now. Asking starts xfconfd if it is not running (it is D-Bus activated);
/// xfce4-notifyd, which is running when this is asked, uses it anyway. Unset is off, as
/// xfce4-notifyd takes it; an xfconfd that cannot be reached says nothing (`None`).
pub async fn read(connection: &Connection) -> Option<bool> {
    let answer = connection
        .call_method(
            Some(XFCONF),
            XFCONF_PATH,
            Some(XFCONF),
            "GetProperty",
            &(CHANNEL, PROPERTY),
        )
        .await;
    match answer {
        Ok(message) => message
            .body()
            .deserialize::<zbus::OwnedVariant>()
            .ok()
            .and_then(|value| bool::try_from(value).ok()),
        Err(zbus::Error::MethodError(name, ..)) if name.as_str().ends_with("PropertyNotFound") => {
            Some(false)
        }
        Err(e) => {
            tracing::warn!("could not read xfce4-notifyd's do-not-disturb from xfconf: {e}");
            None
        }
    }
}

/// What a signal from xfconfd says about the property, if it is about it.
pub fn changed(message: &Message) -> Option<bool> {
    let header = message.header();
    let member = header.member()?;
    match member.as_str() {
        "PropertyChanged" => {
            let (channel, property, value) = message
                .body()
                .deserialize::<(String, String, zbus::OwnedVariant)>()
                .ok()?;
            is_ours(&channel, &property)
                .then(|| bool::try_from(value).ok())
                .flatten()
        }
        // `xfconf-query -r`, or a reset to the default: off, as when it was never set.
        "PropertyRemoved" => {
            let (channel, property) = message.body().deserialize::<(String, String)>().ok()?;
            is_ours(&channel, &property).then_some(false)
        }
        _ => None,
    }
}

fn is_ours(channel: &str, property: &str) -> bool {
    channel == CHANNEL && property == PROPERTY
}

#[cfg(test)]
mod tests {
    use super::*;
    use zbus::Variant as Value;

    fn signal<B>(member: &str, body: &B) -> Message
    where
        B: serde::Serialize + zbus::DynamicType,
    {
        Message::signal(XFCONF_PATH, XFCONF, member)
            .build(body)
            .unwrap()
    }

    #[test]
    fn a_change_of_the_property_says_on_or_off() {
        let on = signal("PropertyChanged", &(CHANNEL, PROPERTY, Value::from(true)));
        assert_eq!(changed(&on), Some(true));
        let off = signal("PropertyChanged", &(CHANNEL, PROPERTY, Value::from(false)));
        assert_eq!(changed(&off), Some(false));
        let removed = signal("PropertyRemoved", &(CHANNEL, PROPERTY));
        assert_eq!(changed(&removed), Some(false));
    }

    #[test]
    fn other_properties_channels_and_types_say_nothing() {
        for (channel, property) in [
            (CHANNEL, "/notify-location"),
            (CHANNEL, "/do-not-disturb/extra"),
            ("xfce4-panel", PROPERTY),
        ] {
            let message = signal("PropertyChanged", &(channel, property, Value::from(true)));
            assert_eq!(changed(&message), None, "{channel} {property}");
            let removed = signal("PropertyRemoved", &(channel, property));
            assert_eq!(changed(&removed), None, "{channel} {property}");
        }
        // Set by hand to a string: not a switch the server reads as on.
        let text = signal("PropertyChanged", &(CHANNEL, PROPERTY, Value::from("true")));
        assert_eq!(changed(&text), None);
        let other = signal("PropertiesChanged", &(CHANNEL, PROPERTY));
        assert_eq!(changed(&other), None);
    }
}
