//! The OpenAPI document lists exactly the routes the controller serves.

use std::collections::BTreeSet;
use tessera_controller::http::ROUTES;

#[test]
fn the_openapi_document_describes_exactly_the_served_routes() {
    let doc: serde_json::Value = serde_json::from_str(tessera_controller::openapi::DOCUMENT).expect("openapi.json is JSON");
    assert_eq!(doc["openapi"], "3.1.0");
    let mut described = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().unwrap().keys() {
            described.insert((method.to_uppercase(), path.clone()));
            let op = &item[method];
            assert!(op["summary"].is_string(), "{method} {path} has a summary");
            assert!(op["responses"].as_object().is_some_and(|r| !r.is_empty()), "{method} {path} has responses");
            // every path parameter is declared
            for seg in path.split('/').filter(|s| s.starts_with('{')) {
                let name = seg.trim_matches(|c| c == '{' || c == '}');
                let declared = op["parameters"].as_array().is_some_and(|ps| ps.iter().any(|p| p["name"] == name && p["in"] == "path"));
                assert!(declared, "{method} {path}: parameter {name} is declared");
            }
        }
    }
    let served: BTreeSet<(String, String)> = ROUTES.iter().map(|(m, p)| (m.to_string(), p.to_string())).collect();
    assert_eq!(described, served, "documented routes vs served routes");
    // every schema reference resolves
    let text = tessera_controller::openapi::DOCUMENT;
    for (i, _) in text.match_indices("\"$ref\": \"#/components/") {
        let rest = &text[i + "\"$ref\": \"#/components/".len()..];
        let target = &rest[..rest.find('"').unwrap()];
        let (kind, name) = target.split_once('/').unwrap();
        assert!(doc["components"][kind][name].is_object(), "reference {target} resolves");
    }
}
