//! The design keeps `tauri.conf.json`, `capabilities/`, `ui/` and `icons/` at the repository
//! top level, beside the workspace rather than inside this crate. Without the `desktop`
//! feature (the headless `list`/`watch` build) there is nothing to generate.

/// The window's commands; each gets an `allow-<command>` permission for the capability file.
#[cfg(feature = "desktop")]
const COMMANDS: &[&str] = &[
    "sessions",
    "act",
    "settings",
    "save_settings",
    "dismiss",
    "answer_request",
    "close_window",
    "open_log",
    "quit",
];

fn main() {
    #[cfg(feature = "desktop")]
    {
        println!("cargo:rerun-if-changed=../capabilities");
        println!("cargo:rerun-if-changed=../ui");
        println!("cargo:rerun-if-changed=../icons");
        let attributes = tauri_build::Attributes::new()
            .config_path("../tauri.conf.json")
            .capabilities_path_pattern("../capabilities/**/*")
            .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS))
            .windows_attributes(
                tauri_build::WindowsAttributes::new().window_icon_path("../icons/icon.ico"),
            );
        tauri_build::try_build(attributes).expect("tauri-build failed");
    }
}
