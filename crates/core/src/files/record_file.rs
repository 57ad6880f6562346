//! Reading the records lf writes, whatever they are: bounded, never blocking on what is
//! planted where a record belongs, and with a message that says what is wrong.

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::path::Path;

use serde::de::DeserializeOwned;

use crate::event::Warning;

/// Whether an I/O error means the file (or a directory on its path) is not there: a
/// record being renamed into place or removed, which is not a problem to report.
pub(crate) fn is_absent(error: &io::Error) -> bool {
    #[cfg(unix)]
    if error.raw_os_error() == Some(libc::ENOTDIR) {
        return true;
    }
    error.kind() == io::ErrorKind::NotFound
}

/// Open a record lf wrote, for reading, if it is a regular file. `what` names the record
/// in messages ("Ask record").
///
/// On Unix the file is opened non-blocking: a FIFO planted where a record belongs would
/// otherwise block the engine until someone writes to it. Non-blocking has no effect on
/// reading regular files, and anything else is refused before it is read.
pub(crate) fn open_record_file(
    path: &Path,
    what: &str,
) -> Result<Option<(File, Metadata)>, Warning> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = match options.open(path) {
        Ok(file) => file,
        Err(error) if is_absent(&error) => return Ok(None),
        Err(error) => {
            return Err(Warning::new(
                Some(path.to_path_buf()),
                format!("{what} cannot be read: {error}"),
            ))
        }
    };
    let metadata = file.metadata().map_err(|error| {
        Warning::new(
            Some(path.to_path_buf()),
            format!("{what} cannot be read: {error}"),
        )
    })?;
    if !metadata.is_file() {
        return Err(Warning::new(
            Some(path.to_path_buf()),
            format!(
                "{what} is not a regular file (it is {})",
                file_type_name(&metadata)
            ),
        ));
    }
    Ok(Some((file, metadata)))
}

fn file_type_name(metadata: &Metadata) -> &'static str {
    let kind = metadata.file_type();
    if kind.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a named pipe";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_block_device() || kind.is_char_device() {
            return "a device";
        }
    }
    "not a plain file"
}

/// The bytes of a record lf wrote, or `None` when it does not exist (any more). Reads at
/// most `cap + 1` bytes, so a huge file costs nothing but the warning.
pub(crate) fn read_record_file(
    path: &Path,
    what: &str,
    cap: u64,
) -> Result<Option<Vec<u8>>, Warning> {
    let Some((file, metadata)) = open_record_file(path, what)? else {
        return Ok(None);
    };
    let too_large = || {
        Warning::new(
            Some(path.to_path_buf()),
            format!("{what} is larger than {}", size_text(cap)),
        )
    };
    if metadata.len() > cap {
        return Err(too_large());
    }
    // The length can change under us (a writer appending): `take` bounds the read anyway.
    let mut bytes = Vec::with_capacity(metadata.len() as usize + 1);
    match file.take(cap + 1).read_to_end(&mut bytes) {
        Ok(_) if bytes.len() as u64 > cap => Err(too_large()),
        Ok(_) => Ok(Some(bytes)),
        Err(error) => Err(Warning::new(
            Some(path.to_path_buf()),
            format!("{what} cannot be read: {error}"),
        )),
    }
}

fn size_text(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// Decode a record lf wrote, with a message that tells an empty file, broken JSON and
/// JSON of the wrong shape apart.
pub(crate) fn decode_record<T: DeserializeOwned>(
    path: &Path,
    what: &str,
    bytes: &[u8],
) -> Result<T, Warning> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Warning::new(
            Some(path.to_path_buf()),
            format!("{what} is empty"),
        ));
    }
    serde_json::from_slice(bytes).map_err(|error| {
        let message = match error.classify() {
            serde_json::error::Category::Data => {
                format!("{what} does not have the fields lf writes: {error}")
            }
            _ => format!("{what} is not valid JSON: {error}"),
        };
        Warning::new(Some(path.to_path_buf()), message)
    })
}
