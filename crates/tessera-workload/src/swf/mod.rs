//! The Standard Workload Format (SWF), version 2.2.
//!
//! One job per line, 18 whitespace-separated fields, `-1` for unknown; comment lines
//! start with `;` and the ones of the form `; Key: value` at the top of the file form
//! the header. See <https://www.cs.huji.ac.il/labs/parallel/workload/swf.html>.

mod header;
mod reader;
mod record;
mod writer;

pub use header::{header_int, HeaderError, SwfHeader};
pub use reader::{from_reader, read_all, LenientReport, SwfError, SwfReader};
pub use record::{SwfRecord, FIELD_NAMES};
pub use writer::SwfWriter;
