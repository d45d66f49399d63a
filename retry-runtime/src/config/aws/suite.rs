//! The AWS SDKs' shared profile-parser conformance suite, run against this crate's reader of
//! the shared config file.
//!
//! The cases are those of `profile-parser-tests.json` in smithy-rs
//! (<https://github.com/smithy-lang/smithy-rs/blob/main/aws/rust-runtime/aws-runtime/test-data/profile-parser-tests.json>,
//! formerly under `aws/rust-runtime/aws-config/test-data/`; as of commit
//! `5f7113f506f301296311ef637e40d226e0a6e548`), Copyright Amazon.com, Inc. or its affiliates,
//! licensed under the Apache License, Version 2.0
//! (<https://www.apache.org/licenses/LICENSE-2.0>). They are test vectors, kept as written
//! there: each case's name, its config file, and the profiles the SDKs read from it (each
//! profile's properties, keys in lower case) or the text of the error that makes them reject
//! it. Left out: the cases of the shared credentials file, whose settings this crate does not
//! read ("Profiles duplicated in multiple files are merged.", "Default profiles with mixed
//! prefixes merge with credentials", "Duplicate properties between files uses credentials
//! property.", "Credentials profiles with prefix are ignored.", "profile name with extra
//! whitespace in credentials", "sso-session without the space before the name is a profile"),
//! and the second of the two identical "Profiles can contain multiple properties." cases. The
//! `sso_sessions` the suite also lists are not profiles, and not read.
//!
//! Each case is run twice: as written, against the profiles the reader finds; and with the
//! suite's names turned into the retry settings (the words `name` and `name2` into
//! `max_attempts` and `retry_mode`, `value` and `value2` into `4` and `adaptive`), against the
//! settings of each profile, which are what the SDKs parse from the same values. Where the SDKs
//! reject the file, the reader warns with their message, keeps the rest, and never panics.

use super::{Key, Layer, Source, max_attempts, parse, read, retry_mode};

struct Case {
    name: &'static str,
    config: &'static str,
    expect: Expect,
}

/// `profile -> [(key, value)]`, or the text of the error.
enum Expect {
    Profiles(&'static [(&'static str, &'static [(&'static str, &'static str)])]),
    Error(&'static str),
}

#[rustfmt::skip]
const CASES: &[Case] = &[
    Case {
        name: "Empty files have no profiles.",
        config: "",
        expect: Expect::Profiles(&[]),
    },
    Case {
        name: "Empty profiles have no properties.",
        config: "[profile foo]",
        expect: Expect::Profiles(&[
            ("foo", &[]),
        ]),
    },
    Case {
        name: "Profile names support alphanumeric characters and - / . % @ _ : +",
        config: "[profile some-thing:long/the_one%only.foo@bar+]\n[profile foo!bar]",
        expect: Expect::Profiles(&[
            ("some-thing:long/the_one%only.foo@bar+", &[]),
        ]),
    },
    Case {
        name: "Profile definitions must end with brackets.",
        config: "[profile foo",
        expect: Expect::Error("Profile definition must end with ']'"),
    },
    Case {
        name: "Profile names should be trimmed.",
        config: "[profile \tfoo \t]",
        expect: Expect::Profiles(&[
            ("foo", &[]),
        ]),
    },
    Case {
        name: "Tabs can separate profile names from profile prefix.",
        config: "[profile\tfoo]",
        expect: Expect::Profiles(&[
            ("foo", &[]),
        ]),
    },
    Case {
        name: "Properties must be defined in a profile.",
        config: "name = value",
        expect: Expect::Error("Expected a profile definition"),
    },
    Case {
        name: "Profiles can contain properties.",
        config: "[profile foo]\nname = value",
        expect: Expect::Profiles(&[
            ("foo", &[("name", "value")]),
        ]),
    },
    Case {
        name: "Windows style line endings are supported.",
        config: "[profile foo]\r\nname = value",
        expect: Expect::Profiles(&[
            ("foo", &[("name", "value")]),
        ]),
    },
    Case {
        name: "Equals signs are supported in property values.",
        config: "[profile foo]\nname = val=ue",
        expect: Expect::Profiles(&[
            ("foo", &[("name", "val=ue")]),
        ]),
    },
    Case {
        name: "Unicode characters are supported in property values.",
        config: "[profile foo]\nname = ðŸ˜‚",
        expect: Expect::Profiles(&[
            ("foo", &[("name", "ðŸ˜‚")]),
        ]),
    },
    Case {
        name: "Profiles can contain multiple properties.",
        config: "[profile foo]\nname = value\nname2 = value2",
        expect: Expect::Profiles(&[
            ("foo", &[("name", "value"), ("name2", "value2")]),
        ]),
    },
    Case {
        name: "Property keys and values are trimmed.",
        config: "[profile foo]\nname \t=  \tvalue \t",
        expect: Expect::Profiles(&[
            ("foo", &[("name", "value")]),
        ]),
    },
    Case {
        name: "Property values can be empty.",
        config: "[profile foo]\nname =",
        expect: Expect::Profiles(&[
            ("foo", &[("name", "")]),
        ]),
    },
    Case {
        name: "Property key cannot be empty.",
        config: "[profile foo]\n= value",
        expect: Expect::Error("Property did not have a name"),
    },
    Case {
        name: "Property definitions must contain an equals sign.",
        config: "[profile foo]\nkey : value",
        expect: Expect::Error("Expected an '=' sign defining a property"),
    },
    Case {
        name: "Multiple profiles can be empty.",
        config: "[profile foo]\n[profile bar]",
        expect: Expect::Profiles(&[
            ("foo", &[]),
            ("bar", &[]),
        ]),
    },
    Case {
        name: "Multiple profiles can have properties.",
        config: "[profile foo]\nname = value\n[profile bar]\nname2 = value2",
        expect: Expect::Profiles(&[
            ("foo", &[("name", "value")]),
            ("bar", &[("name2", "value2")]),
        ]),
    },
    Case {
        name: "Blank lines are ignored.",
        config: "\t \n[profile foo]\n\t\n \nname = value\n\t \n[profile bar]\n \t",
        expect: Expect::Profiles(&[
            ("foo", &[("name", "value")]),
            ("bar", &[]),
        ]),
    },
    Case {
        name: "Pound sign comments are ignored.",
        config: "# Comment\n[profile foo] # Comment\nname = value # Comment with # sign",
        expect: Expect::Profiles(&[
            ("foo", &[("name", "value")]),
        ]),
    },
    Case {
        name: "Semicolon sign comments are ignored.",
        config: "; Comment\n[profile foo] ; Comment\nname = value ; Comment with ; sign",
        expect: Expect::Profiles(&[
            ("foo", &[("name", "value")]),
        ]),
    },
    Case {
        name: "All comment types can be used together.",
        config: "# Comment\n[profile foo] ; Comment\nname = value # Comment with ; sign",
        expect: Expect::Profiles(&[
            ("foo", &[("name", "value")]),
        ]),
    },
    Case {
        name: "Comments can be empty.",
        config: ";\n[profile foo];\nname = value ;\n",
        expect: Expect::Profiles(&[
            ("foo", &[("name", "value")]),
        ]),
    },
    Case {
        name: "Comments can be adjacent to profile names.",
        config: "[profile foo]; Adjacent semicolons\n[profile bar]# Adjacent pound signs",
        expect: Expect::Profiles(&[
            ("foo", &[]),
            ("bar", &[]),
        ]),
    },
    Case {
        name: "Comments adjacent to values are included in the value.",
        config: "[profile foo]\nname = value; Adjacent semicolons\nname2 = value# Adjacent pound signs",
        expect: Expect::Profiles(&[
            ("foo", &[("name", "value; Adjacent semicolons"), ("name2", "value# Adjacent pound signs")]),
        ]),
    },
    Case {
        name: "Property values can be continued on the next line.",
        config: "[profile foo]\nname = value\n -continued",
        expect: Expect::Profiles(&[
            ("foo", &[("name", "value\n-continued")]),
        ]),
    },
    Case {
        name: "Property values can be continued with multiple lines.",
        config: "[profile foo]\nname = value\n -continued\n -and-continued",
        expect: Expect::Profiles(&[
            ("foo", &[("name", "value\n-continued\n-and-continued")]),
        ]),
    },
    Case {
        name: "Continuations are trimmed.",
        config: "[profile foo]\nname = value\n \t -continued \t ",
        expect: Expect::Profiles(&[
            ("foo", &[("name", "value\n-continued")]),
        ]),
    },
    Case {
        name: "Continuation values include pound comments.",
        config: "[profile foo]\nname = value\n -continued # Comment",
        expect: Expect::Profiles(&[
            ("foo", &[("name", "value\n-continued # Comment")]),
        ]),
    },
    Case {
        name: "Continuation values include semicolon comments.",
        config: "[profile foo]\nname = value\n -continued ; Comment",
        expect: Expect::Profiles(&[
            ("foo", &[("name", "value\n-continued ; Comment")]),
        ]),
    },
    Case {
        name: "Continuations cannot be used outside of a profile.",
        config: " -continued",
        expect: Expect::Error("Expected a profile definition"),
    },
    Case {
        name: "Continuations cannot be used outside of a property.",
        config: "[profile foo]\n -continued",
        expect: Expect::Error("Expected a property definition"),
    },
    Case {
        name: "Continuations reset with profile definitions.",
        config: "[profile foo]\nname = value\n[profile foo]\n -continued",
        expect: Expect::Error("Expected a property definition"),
    },
    Case {
        name: "Duplicate profiles in the same file merge properties.",
        config: "[profile foo]\nname = value\n[profile foo]\nname2 = value2",
        expect: Expect::Profiles(&[
            ("foo", &[("name", "value"), ("name2", "value2")]),
        ]),
    },
    Case {
        name: "Duplicate properties in a profile use the last one defined.",
        config: "[profile foo]\nname = value\nname = value2",
        expect: Expect::Profiles(&[
            ("foo", &[("name", "value2")]),
        ]),
    },
    Case {
        name: "Duplicate properties in duplicate profiles use the last one defined.",
        config: "[profile foo]\nname = value\n[profile foo]\nname = value2",
        expect: Expect::Profiles(&[
            ("foo", &[("name", "value2")]),
        ]),
    },
    Case {
        name: "Duplicate properties in duplicate profiles use the last one defined (case insensitive).",
        config: "[profile foo]\nName = value\n[profile foo]\nname = value2",
        expect: Expect::Profiles(&[
            ("foo", &[("name", "value2")]),
        ]),
    },
    Case {
        name: "Default profile with profile prefix overrides default profile without prefix when profile prefix is first.",
        config: "[profile default]\nname = value\n[default]\nname2 = value2",
        expect: Expect::Profiles(&[
            ("default", &[("name", "value")]),
        ]),
    },
    Case {
        name: "Default profile with profile prefix overrides default profile without prefix when profile prefix is last.",
        config: "[default]\nname2 = value2\n[profile default]\nname = value",
        expect: Expect::Profiles(&[
            ("default", &[("name", "value")]),
        ]),
    },
    Case {
        name: "Invalid profile names are ignored.",
        // The case's credentials file (`[in valid 2]`) is left out.
        config: "[profile in valid]\nname = value",
        expect: Expect::Profiles(&[]),
    },
    Case {
        name: "Invalid property names are ignored.",
        config: "[profile foo]\nin valid = value",
        expect: Expect::Profiles(&[
            ("foo", &[]),
        ]),
    },
    Case {
        name: "All valid profile name characters are supported.",
        config: "[profile ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_]",
        expect: Expect::Profiles(&[
            ("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", &[]),
        ]),
    },
    Case {
        name: "All valid property name characters are supported.",
        config: "[profile foo]\nABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_ = value",
        expect: Expect::Profiles(&[
            ("foo", &[("abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz0123456789-_", "value")]),
        ]),
    },
    Case {
        name: "Properties can have sub-properties.",
        config: "[profile foo]\ns3 =\n name = value",
        expect: Expect::Profiles(&[
            ("foo", &[("s3", "\nname = value")]),
        ]),
    },
    Case {
        name: "Invalid sub-property definitions cause an error.",
        config: "[profile foo]\ns3 =\n invalid",
        expect: Expect::Error("Expected an '=' sign defining a sub-property"),
    },
    Case {
        name: "Sub-property definitions can have an empty value.",
        config: "[profile foo]\ns3 =\n name =",
        expect: Expect::Profiles(&[
            ("foo", &[("s3", "\nname =")]),
        ]),
    },
    Case {
        name: "Sub-property definitions cannot have an empty name.",
        config: "[profile foo]\ns3 =\n = value",
        expect: Expect::Error("Sub-property did not have a name"),
    },
    Case {
        name: "Sub-property definitions can have an invalid name.",
        config: "[profile foo]\ns3 =\n in valid = value",
        expect: Expect::Profiles(&[
            ("foo", &[("s3", "\nin valid = value")]),
        ]),
    },
    Case {
        name: "Sub-properties can have blank lines that are ignored",
        config: "[profile foo]\ns3 =\n name = value\n\t \n name2 = value2",
        expect: Expect::Profiles(&[
            ("foo", &[("s3", "\nname = value\nname2 = value2")]),
        ]),
    },
    Case {
        name: "Default profiles with mixed prefixes in the config file ignore the one without prefix when merging.",
        config: "[profile default]\nname = value\n[default]\nname2 = value2\n[profile default]\nname3 = value3",
        expect: Expect::Profiles(&[
            ("default", &[("name", "value"), ("name3", "value3")]),
        ]),
    },
    Case {
        name: "Config profiles without prefix are ignored.",
        config: "[foo]\nname = value",
        expect: Expect::Profiles(&[]),
    },
    Case {
        name: "Comment characters adjacent to profile decls",
        config: "[profile foo]; semicolon\n[profile bar]# pound",
        expect: Expect::Profiles(&[
            ("foo", &[]),
            ("bar", &[]),
        ]),
    },
    Case {
        name: "Invalid continuation",
        config: "[profile foo]\nname = value\n[profile foo]\n -continued",
        expect: Expect::Error("Expected a property definition, found continuation"),
    },
    Case {
        name: "sneaky profile name",
        config: "[profilefoo]\nname = value\n[profile bar]",
        expect: Expect::Profiles(&[
            ("bar", &[]),
        ]),
    },
    Case {
        name: "profile name with extra whitespace",
        config: "[   profile foo    ]\nname = value\n[profile bar]",
        expect: Expect::Profiles(&[
            ("bar", &[]),
            ("foo", &[("name", "value")]),
        ]),
    },
    Case {
        name: "properties from an invalid profile name are ignored",
        config: "[profile foo]\nname = value\n[profile in valid]\nx = 1\n[profile bar]\nname = value2",
        expect: Expect::Profiles(&[
            ("bar", &[("name", "value2")]),
            ("foo", &[("name", "value")]),
        ]),
    },
    Case {
        name: "sso-session with properties",
        config: "[sso-session foo]\nname = value\n[profile bar]",
        expect: Expect::Profiles(&[
            ("bar", &[]),
        ]),
    },
    Case {
        name: "A typo'd sso-session will be ignored",
        config: "[sso-sesion foo]\nname = value\n[profile bar]",
        expect: Expect::Profiles(&[
            ("bar", &[]),
        ]),
    },
];

/// What `read` made of `text`: `profile -> sorted [(key, value)]`, sorted by profile.
fn profiles(text: &str, warnings: &mut Vec<String>) -> Vec<(String, Vec<(String, String)>)> {
    let mut found: Vec<(String, Vec<(String, String)>)> = read(text, "config", &mut |w| {
        warnings.push(w);
    })
    .profiles
    .into_iter()
    .map(|p| {
        let mut properties: Vec<(String, String)> =
            p.properties.into_iter().map(|p| (p.key, p.value)).collect();
        properties.sort();
        (p.name, properties)
    })
    .collect();
    found.sort();
    found
}

#[test]
fn the_profile_parser_suite() {
    for case in CASES {
        let mut warnings = Vec::new();
        let found = profiles(case.config, &mut warnings);
        match case.expect {
            Expect::Profiles(expected) => {
                let mut expected: Vec<(String, Vec<(String, String)>)> = expected
                    .iter()
                    .map(|(name, properties)| {
                        let mut properties: Vec<(String, String)> = properties
                            .iter()
                            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                            .collect();
                        properties.sort();
                        ((*name).to_string(), properties)
                    })
                    .collect();
                expected.sort();
                assert_eq!(found, expected, "{}", case.name);
                assert!(warnings.is_empty(), "{}: {warnings:?}", case.name);
            }
            Expect::Error(message) => {
                assert!(
                    warnings.iter().any(|w| w.contains(message)),
                    "{}: no warning says {message:?}: {warnings:?}",
                    case.name
                );
                assert!(
                    warnings
                        .iter()
                        .all(|w| w.contains("the AWS SDKs reject the whole file")),
                    "{}: {warnings:?}",
                    case.name
                );
            }
        }
    }
}

/// `text` with the suite's names turned into the retry settings, word by word.
fn renamed(text: &str) -> String {
    let word = |w: &str| match w {
        "name" => "max_attempts".to_string(),
        "Name" => "Max_Attempts".to_string(),
        "name2" => "retry_mode".to_string(),
        "value" => "4".to_string(),
        "value2" => "adaptive".to_string(),
        other => other.to_string(),
    };
    let mut out = String::new();
    let mut current = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            current.push(c);
        } else {
            out.push_str(&word(&current));
            current.clear();
            out.push(c);
        }
    }
    out.push_str(&word(&current));
    out
}

#[test]
fn the_profile_parser_suite_on_the_retry_settings() {
    let mut checked = 0;
    for case in CASES {
        let Expect::Profiles(expected) = case.expect else {
            continue;
        };
        let config = renamed(case.config);
        for (profile, properties) in expected {
            // The settings the SDKs parse from the profile's values, and a warning for each
            // value that is none.
            let mut want = Layer::default();
            let mut invalid = Vec::new();
            for (key, value) in *properties {
                let (key, value) = (renamed(key), renamed(value));
                let mut why =
                    |_: &str| invalid.push(format!("{key} = {}", value.replace('\n', "\\n")));
                let parsed = match key.as_str() {
                    "max_attempts" if value.contains('\n') => {
                        why("");
                        None
                    }
                    "max_attempts" => max_attempts(&value, &mut why).map(|v| (Key::MaxAttempts, v)),
                    "retry_mode" => retry_mode(&value, &mut why).map(|v| (Key::Mode, v)),
                    _ => None,
                };
                if let Some((key, value)) = parsed {
                    want.set(key, value, Source::Default);
                }
            }
            let mut warnings = Vec::new();
            let layer = parse(&config, "config", profile, &mut |w| warnings.push(w));
            // The settings of a `[default]` that `[profile default]` replaces are one warning
            // each (`tests::profile_default_replaces_default`), apart from the values' own.
            warnings.retain(|w| !w.contains("which the AWS SDKs read in its place"));
            for key in [Key::Mode, Key::MaxAttempts] {
                let value = |l: &Layer| l.get(key).map(|(v, _)| *v);
                assert_eq!(value(&layer), value(&want), "{} [{profile}]", case.name);
            }
            assert_eq!(warnings.len(), invalid.len(), "{}: {warnings:?}", case.name);
            for (warning, invalid) in warnings.iter().zip(&invalid) {
                assert!(
                    warning.contains(invalid.as_str()),
                    "{}: {warning}",
                    case.name
                );
            }
            checked += usize::from(!properties.is_empty());
        }
    }
    // Most profiles of the suite have properties: the renaming reached them.
    assert_eq!(checked, 35);
}
