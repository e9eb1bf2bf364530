//! Writing outputs: temp file then rename, so that a crash or error never leaves a half-written
//! file behind; only over a regular file or nothing, so that a symlink, FIFO, device or folder
//! at an output's path is never replaced or followed; and an output folder's completion marker
//! ([`MANIFEST`]) removed before a run writes its first file ([`begin`]) and written after its
//! last ([`own_folder`]), so that a run killed halfway never leaves a folder that reads as
//! complete.
//!
//! Architecture invariant: the only way the library and the binary write files.

use std::io::Write;
use std::path::Path;

/// What is at `path` when it is something orrery will not replace, in words
/// (`a symbolic link`); `None` for a regular file or nothing.
fn not_replaceable(path: &Path) -> std::io::Result<Option<&'static str>> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() => Ok(None),
        Ok(m) => Ok(Some(crate::files::kind(m.file_type()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(std::io::Error::new(
            e.kind(),
            format!("{}: {e}", path.display()),
        )),
    }
}

/// The refusal to replace `path`, which is `what` (exit 2 in every command: a bad `--out`).
fn refusal(path: &Path, what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        format!(
            "{}: a {what} is there, not a regular file; orrery replaces only regular files \
             (remove it or choose another path)",
            path.display()
        ),
    )
}

/// Write `bytes` to `path` through a `.NAME.tmp-XXXXXX` file in the same folder (same file
/// system, so the rename is atomic), synced before it is renamed over `path`. What is at
/// `path` must be a regular file or nothing: a symlink (the rename would replace the link, and
/// a writer that followed it would write outside the folder), a FIFO, a device or a folder is
/// refused with an error naming the path, before anything is written. On any error the
/// temporary file is removed (`NamedTempFile` deletes itself when dropped unpersisted). The
/// file gets the permissions `File::create` would give (0666 less the umask), not tempfile's
/// private 0600, so outputs stay readable as before. A process past `--max-memory`
/// ([`crate::budget::memory_guard`]) writes nothing more: the error says why.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // `--max-memory` covers writing too: the file's bytes are built by now.
    if crate::budget::memory_guard(&format!("writing {}", path.display())) {
        let why = crate::budget::tripped().unwrap_or_default();
        return Err(std::io::Error::new(
            std::io::ErrorKind::OutOfMemory,
            format!("{}: not written: {why}", path.display()),
        ));
    }
    if let Some(what) = not_replaceable(path)? {
        return Err(refusal(path, what));
    }
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}.tmp-");
    let mut b = tempfile::Builder::new();
    b.prefix(&prefix);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        b.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let with_path =
        |e: std::io::Error| std::io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let mut f = b.tempfile_in(dir).map_err(with_path)?;
    f.write_all(bytes).map_err(with_path)?;
    f.as_file().sync_all().map_err(with_path)?;
    f.persist(path).map(drop).map_err(|e| with_path(e.error))
}

/// Rewrite an existing file atomically, keeping what it is: through a symlink the file it
/// points to is rewritten (the link stays a link), and its permission bits stay as they were
/// (`fmt --write`).
pub fn rewrite(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let target = std::fs::canonicalize(path)?;
    let perms = std::fs::metadata(&target)?.permissions();
    write_atomic(&target, bytes)?;
    std::fs::set_permissions(&target, perms)
}

/// The manifest a run leaves in its output folder: the names of exactly the files it wrote,
/// one per line. It is the folder's completion marker: removed before the run writes its first
/// file ([`begin`]) and written after its last ([`own_folder`]), so a folder without one, or
/// whose files are not all there, holds an incomplete run.
pub const MANIFEST: &str = ".orrery-files";

/// The names the folder's earlier runs wrote, kept while a run is writing (its manifest is
/// gone by then): [`own_folder`] removes those the new run does not write, then this list.
pub const EARLIER: &str = ".orrery-earlier";

/// A plain file name as manifests hold them: no folder, not hidden.
fn plain(n: &str) -> bool {
    !n.is_empty() && !n.starts_with('.') && !n.contains('/') && !n.contains('\\')
}

/// The plain names listed in the regular file `dir/name` (none if it is missing or not a
/// regular file: a link is never read through).
fn listed(dir: &Path, name: &str) -> std::io::Result<Vec<String>> {
    let p = dir.join(name);
    if not_replaceable(&p)?.is_some() || !p.exists() {
        return Ok(Vec::new());
    }
    let text = crate::files::read_text(&p, crate::files::MAX_INPUT_BYTES)
        .map_err(|e| std::io::Error::other(format!("{} {e}", p.display())))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|n| plain(n))
        .map(str::to_string)
        .collect())
}

/// Start writing a run into `dir`: create it if missing, then take away its completion marker
/// before any file of the run is written. The names the marker listed join [`EARLIER`] first
/// (written atomically), so that [`own_folder`] can still remove an earlier run's files however
/// many runs were killed in between. A marker that is not a regular file is refused.
pub fn begin(dir: &Path) -> std::io::Result<()> {
    create_dir(dir)?;
    let manifest = dir.join(MANIFEST);
    if let Some(what) = not_replaceable(&manifest)? {
        return Err(refusal(&manifest, what));
    }
    if !manifest.exists() {
        return Ok(());
    }
    let mut names: std::collections::BTreeSet<String> = listed(dir, EARLIER)?.into_iter().collect();
    names.extend(listed(dir, MANIFEST)?);
    let text: String = names.iter().map(|n| format!("{n}\n")).collect();
    write_atomic(&dir.join(EARLIER), text.as_bytes())?;
    std::fs::remove_file(&manifest)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", manifest.display())))?;
    // The marker's removal reaches the disk before any new file does (where the file system
    // can sync a folder at all; one that cannot is no reason to stop).
    let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
    Ok(())
}

/// Finish a run in `dir`: remove the files earlier runs listed ([`MANIFEST`] and [`EARLIER`])
/// that this run did not write, and the temporary files a killed writer left
/// ([`write_atomic`]'s `.NAME.tmp-XXXXXX`, six random characters); then write this run's
/// manifest, last, and drop [`EARLIER`]. Only regular files directly in `dir` are removed,
/// never a folder or a link.
pub fn own_folder(dir: &Path, written: &[String]) -> std::io::Result<()> {
    let keep: std::collections::BTreeSet<&str> = written
        .iter()
        .map(String::as_str)
        .filter(|n| plain(n))
        .collect();
    let mut old = listed(dir, MANIFEST)?;
    old.extend(listed(dir, EARLIER)?);
    for name in old.iter().filter(|n| !keep.contains(n.as_str())) {
        let p = dir.join(name);
        if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file()) {
            std::fs::remove_file(&p)?;
        }
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let stale = name
                .strip_prefix('.')
                .and_then(|r| r.rsplit_once(".tmp-"))
                .is_some_and(|(n, random)| {
                    !n.is_empty()
                        && random.len() == 6
                        && random.bytes().all(|b| b.is_ascii_alphanumeric())
                });
            if stale && e.file_type().is_ok_and(|t| t.is_file()) {
                std::fs::remove_file(e.path())?;
            }
        }
    }
    let mut text = String::new();
    for n in &keep {
        text.push_str(n);
        text.push('\n');
    }
    write_atomic(&dir.join(MANIFEST), text.as_bytes())?;
    let earlier = dir.join(EARLIER);
    if std::fs::symlink_metadata(&earlier).is_ok_and(|m| m.is_file()) {
        std::fs::remove_file(&earlier)?;
    }
    Ok(())
}

/// Create an output folder (and its parents) if missing: with [`write_atomic`], the only way
/// the library writes to the file system. What is at `dir` must be a folder (or a link to one:
/// the folder a user names is theirs to place); anything else is refused, naming it.
pub fn create_dir(dir: &Path) -> std::io::Result<()> {
    if let Ok(m) = std::fs::symlink_metadata(dir) {
        if std::fs::metadata(dir).is_ok_and(|t| t.is_dir()) {
            return Ok(());
        }
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!(
                "{}: a {} is there, not a folder",
                dir.display(),
                crate::files::kind(m.file_type())
            ),
        ));
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", dir.display())))
}

/// Create `dir` and write each (name, text) into it atomically, in order; the names written.
pub fn write_files<N: AsRef<str>, T: AsRef<str>>(
    dir: &Path,
    files: impl IntoIterator<Item = (N, T)>,
) -> std::io::Result<Vec<String>> {
    create_dir(dir)?;
    let mut out = Vec::new();
    for (name, text) in files {
        write_atomic(&dir.join(name.as_ref()), text.as_ref().as_bytes())?;
        out.push(name.as_ref().to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn replaces_whole_file_and_leaves_no_temp() {
        let dir = std::env::temp_dir().join(format!("orrery-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("x.txt");
        super::write_atomic(&p, b"first").unwrap();
        super::write_atomic(&p, b"second").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "second");
        let leftovers = std::fs::read_dir(&dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains(".tmp-")
            })
            .count();
        assert_eq!(leftovers, 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn temps_in(dir: &std::path::Path) -> usize {
        std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                let n = e.as_ref().unwrap().file_name();
                n.to_string_lossy().contains(".tmp-")
            })
            .count()
    }

    #[test]
    fn a_failed_rename_leaves_no_temp() {
        let dir = std::env::temp_dir().join(format!("orrery-atomic-fail-{}", std::process::id()));
        // The target is a non-empty folder: the temporary file cannot be renamed over it.
        std::fs::create_dir_all(dir.join("target").join("inside")).unwrap();
        assert!(super::write_atomic(&dir.join("target"), b"x").is_err());
        assert_eq!(temps_in(&dir), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn written_files_get_the_permissions_of_file_create() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("orrery-atomic-mode-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::File::create(dir.join("plain")).unwrap();
        super::write_atomic(&dir.join("atomic"), b"x").unwrap();
        let mode = |n: &str| std::fs::metadata(dir.join(n)).unwrap().permissions().mode();
        assert_eq!(mode("atomic"), mode("plain"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
