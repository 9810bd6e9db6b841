//! The plugin files `hooktrack install|check|uninstall opencode|kilo|pi` write into a
//! scratch HOME: no agent runs (its end-to-end tests are `tests/e2e/opencode.rs`,
//! `kilo.rs` and `pi.rs`).

use std::fs;

use serde_json::json;

use super::util::*;

/// OpenCode's plugin, written, checked and removed by the CLI as any config is.
#[test]
fn install_check_uninstall_write_check_and_remove_the_opencode_plugin() {
    let h = PluginHome::new("opencode", "OPENCODE_CONFIG_DIR");
    let run = |args: &[&str]| h.run(args);
    let (plugin, text) = h.install_checked(".config/opencode/plugin/hooktrack.js");
    // A plugin of another hooktrack version is stale: check says so.
    fs::write(
        &plugin,
        text.replacen(" observer plugin ", " observer plugin 0.0.1 ", 1),
    )
    .expect("write");
    let out = run(&["check", "opencode", "--file-only"]);
    assert!(!out.status.success(), "{out:?}");
    let out = run(&["install", "opencode"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(fs::read_to_string(&plugin).expect("the plugin"), text);
    let out = run(&["uninstall", "opencode"]);
    assert!(out.status.success(), "{out:?}");
    assert!(!plugin.exists());
}

/// Kilo CLI's plugin (OpenCode's, rendered for Kilo), written, checked and removed.
#[test]
fn install_check_uninstall_write_check_and_remove_the_kilo_plugin() {
    let h = PluginHome::new("kilo", "KILO_CONFIG_DIR");
    let home = h.home();
    let run = |args: &[&str]| h.run(args);
    let (plugin, text) = h.install_checked(".config/kilo/plugin/hooktrack.js");
    // OpenCode's plugin, rendered for Kilo: its rows go to Kilo's store.
    assert!(text.contains("for Kilo CLI"), "{text}");
    assert!(!home.join(".config/opencode").exists());
    // An OpenCode plugin is not Kilo's, though the code is the same.
    let opencode = hooktrack()
        .args(["install", "opencode"])
        .env("HOME", home)
        .env_remove("OPENCODE_CONFIG_DIR")
        .output()
        .expect("install opencode");
    assert!(opencode.status.success(), "{opencode:?}");
    assert_ne!(
        fs::read_to_string(home.join(".config/opencode/plugin/hooktrack.js")).expect("opencode"),
        text
    );
    let out = run(&["uninstall", "kilo"]);
    assert!(out.status.success(), "{out:?}");
    assert!(!plugin.exists());
    assert!(home.join(".config/opencode/plugin/hooktrack.js").exists());
}

/// Pi's extension, written, checked and removed; and `check` reading Pi's own exclusion.
#[test]
fn install_check_uninstall_write_check_and_remove_the_pi_extension() {
    let h = PluginHome::new("pi", "PI_CODING_AGENT_DIR");
    let home = h.home();
    let run = |args: &[&str]| h.run(args);
    let (extension, text) = h.install_checked(".pi/agent/extensions/hooktrack.ts");
    // An extension of another hooktrack version is stale: check says so.
    fs::write(
        &extension,
        text.replacen(" observer plugin ", " observer plugin 0.0.1 ", 1),
    )
    .expect("write");
    let out = run(&["check", "pi", "--file-only"]);
    assert!(!out.status.success(), "{out:?}");
    let out = run(&["install", "pi"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(fs::read_to_string(&extension).expect("the extension"), text);
    // `pi config` excluding it in Pi's settings.json (Pi 0.73.1 then loads nothing from
    // it, seen with the real CLI): check says so.
    let settings = home.join(".pi/agent/settings.json");
    let excluded = json!({"extensions": [format!("-{}", extension.display())]});
    fs::write(&settings, excluded.to_string()).expect("settings");
    let out = run(&["check", "pi", "--file-only"]);
    assert!(!out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("excludes")
            || String::from_utf8_lossy(&out.stdout).contains("excludes"),
        "{out:?}"
    );
    fs::remove_file(&settings).expect("settings");
    let out = run(&["uninstall", "pi"]);
    assert!(out.status.success(), "{out:?}");
    assert!(!extension.exists());
}
