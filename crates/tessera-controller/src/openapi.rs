//! The API's OpenAPI 3.1 document, served at `GET /v1/openapi.json`. A test
//! checks that it lists exactly the routes of [`crate::http::ROUTES`].

pub const DOCUMENT: &str = include_str!("../openapi.json");
