mod submit;
