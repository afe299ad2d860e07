//! Advance reservations live: an operator makes them as scontrol does; a
//! maintenance window keeps its node empty (a job that would run into it
//! waits with Slurm's reason and starts when it ends); a job runs inside a
//! user's reservation, on its node; an unknown reservation is refused at
//! submission; reservations are journaled and survive a kill -9.

use super::Live;
use tessera_proto::api::JobStateCode;

fn user() -> String {
    let o = std::process::Command::new("id").arg("-un").output().unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

const CLUSTER: &str = "name = \"resv\"\n\n[[nodetype]]\nname = \"n\"\nnodes = \"node[001-002]\"\ncores = 2\n\n[[partition]]\nname = \"batch\"\nnodes = \"node[001-002]\"\n";

#[test]
fn a_maintenance_window_keeps_its_node_empty_and_a_reservation_holds_its_jobs() {
    let me = user();
    let mut l = Live::start_on(1, 10, Some((CLUSTER, 2)));
    let ok = |o: std::process::Output| {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    let t0 = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let made = ok(l.cli(&["reservation", "create", "ReservationName=maint", "StartTime=now+5", "Duration=0:08", "Nodes=node001", "Flags=MAINT"]));
    assert_eq!(made.trim(), "Reservation created: maint");
    ok(l.cli(&["reservation", "create", "StartTime=now", "Duration=0:20", "Nodes=node002", &format!("Users={me}")]));
    ok(l.cli(&["reservation", "create", "ReservationName=gone", "StartTime=now+2days", "Duration=60", "Nodes=node002", &format!("Users={me}")]));
    ok(l.cli(&["reservation", "create", "ReservationName=later", "StartTime=now+1days", "Duration=60", "NodeCnt=1", "Flags=MAINT,WEEKLY"]));
    // refused: busy nodes are named, fields are named
    let o = l.cli(&["reservation", "create", "StartTime=now", "Duration=1", "Nodes=node009", "Flags=MAINT"]);
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("Nodes=`node009`"), "{}", String::from_utf8_lossy(&o.stderr));
    let shown = ok(l.cli(&["reservation", "show"]));
    for want in ["ReservationName=maint", "Nodes=node001 NodeCnt=1 Flags=MAINT", &format!("ReservationName={me}_1"), &format!("Users={me}"), "Flags=MAINT,WEEKLY", "State=ACTIVE"] {
        assert!(shown.contains(want), "{want}: {shown}");
    }
    // a job of both nodes for a minute would run into the window: it waits
    let whole = l.submit(&["-N", "2", "-n", "4", "-t", "1:00", "--wrap", "sleep 1"]);
    // inside the user's reservation: on node002 at once
    let inside = l.submit(&["--reservation", &format!("{me}_1"), "-t", "0:10", "--wrap", "sleep 1"]);
    let o = l.cli(&["job", "submit", "--reservation", "nope", "--wrap", "true"]);
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("--reservation"), "{}", String::from_utf8_lossy(&o.stderr));
    l.wait_for("the job in the reservation done", 20, |l| l.job(inside).is_some_and(|j| j.state == JobStateCode::Completed));
    assert_eq!(l.job(inside).unwrap().nodelist, "node002");
    l.wait_for("the whole-machine job waiting for maintenance", 10, |l| l.job(whole).is_some_and(|j| j.state == JobStateCode::Pending && j.reason == "ReqNodeNotAvail, Reserved for maintenance"));
    l.wait_for("the whole-machine job done", 40, |l| l.job(whole).is_some_and(|j| j.state == JobStateCode::Completed));
    assert!(l.job(whole).unwrap().start.unwrap() >= t0 + 13, "it started after the window");
    // the user's has ended and gone; one is deleted, and the rest survive a kill -9
    assert!(!l.cli(&["reservation", "show", &format!("{me}_1")]).status.success(), "ended");
    ok(l.cli(&["reservation", "delete", "gone"]));
    l.kill9_controller();
    l.start_controller();
    let shown = ok(l.cli(&["reservation", "show", "later"]));
    assert!(shown.contains("ReservationName=later") && shown.contains("State=INACTIVE"), "{shown}");
    let o = l.cli(&["reservation", "show", "gone"]);
    assert!(!o.status.success(), "deleted before the restart");
}
