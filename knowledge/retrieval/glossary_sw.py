"""A small general-purpose Swahili -> English glossary for service businesses (salons, spas, clinics,
restaurants, hotels, transport): the words customers use about bookings, money, time, places, people,
facilities and care. Used only to expand search queries; never shown to customers.

No maintained Swahili-English glossary package exists on PyPI (checked: the Swahili packages there are
stopword lists and text cleaners), so this file is written by hand. Keep it general: add common words
of the trade, never phrasings of particular questions.

`WORDS` match whole tokens. `ROOTS` are verb and noun stems matched inside a token, because Swahili
builds words by prefixing subject, tense and object markers to a stem ("nikichelewa" = if I am late:
ni-ki-chelew-a); a stem must be at least four letters so it does not fire inside unrelated words.
"""
from __future__ import annotations

WORDS: dict[str, str] = {
    # question words and small words that carry meaning
    "wapi": "where location", "lini": "when", "saa": "time hour", "ngapi": "how much how many",
    "kiasi": "amount how much", "bei": "price cost", "gharama": "cost price", "je": "",
    "mnafanya": "do offer", "mnatoa": "offer provide", "mnauza": "sell", "kuna": "there is",
    "mna": "have", "mko": "located where", "iko": "located", "ipo": "available", "msaada": "help",
    "bure": "free", "lazima": "must required", "ruhusa": "permission allowed",
    # time
    "leo": "today", "kesho": "tomorrow", "jana": "yesterday", "asubuhi": "morning", "mchana": "afternoon",
    "jioni": "evening", "usiku": "night", "wiki": "week", "mwezi": "month", "miezi": "months",
    "mwaka": "year annual yearly", "mzima": "whole adult full", "wazima": "adults adult", "miaka": "years age",
    "umri": "age",
    "dakika": "minutes", "masaa": "hours",
    "siku": "day", "sikukuu": "holiday public holiday", "likizo": "holiday leave",
    "jumatatu": "monday", "jumanne": "tuesday", "jumatano": "wednesday", "alhamisi": "thursday",
    "ijumaa": "friday", "jumamosi": "saturday", "jumapili": "sunday", "wikendi": "weekend",
    "krismasi": "christmas", "pasaka": "easter", "mapema": "early",
    # money and payment
    "pesa": "money payment", "malipo": "payment", "amana": "deposit", "dhamana": "deposit guarantee warranty",
    "punguzo": "discount", "ofa": "offer discount", "zawadi": "gift present", "vocha": "voucher",
    "kadi": "card", "benki": "bank", "taslimu": "cash", "risiti": "receipt", "ankara": "invoice bill",
    "bili": "bill", "ada": "fee charge", "karo": "fees school", "awamu": "instalments instalment",
    "faini": "fine penalty fee", "ushuru": "tax", "kodi": "tax rent",
    "bahashishi": "tip gratuity", "tipu": "tip", "bakshishi": "tip gratuity", "chenji": "change",
    "mkopo": "credit loan", "bima": "insurance", "uanachama": "membership", "mwanachama": "member",
    # booking
    "miadi": "appointment booking", "nafasi": "slot space availability", "oda": "order",
    "ratiba": "schedule", "foleni": "queue wait", "mapokezi": "reception", "simu": "phone call",
    "ujumbe": "message", "barua": "letter email", "tovuti": "website", "anwani": "address",
    # places and getting there
    "mahali": "place location", "eneo": "area location", "jengo": "building", "ghorofa": "floor",
    "mlango": "door entrance", "milango": "doors", "lango": "gate", "barabara": "road", "mtaa": "street neighbourhood",
    "mji": "town city", "tawi": "branch", "gari": "car vehicle", "magari": "cars vehicles",
    "boksi": "box", "maboksi": "boxes box", "kuhama": "move moving relocate",
    "maegesho": "parking", "pikipiki": "motorbike", "njiani": "on the way",
    "anza": "start begin", "kuanza": "start begin", "kuanzia": "from starting", "mnaanza": "start begin",
    "tunaanza": "start begin", "inaanza": "start begin", "itaanza": "start begin", "naanza": "start begin",
    "basi": "bus", "matatu": "matatu minibus", "teksi": "taxi", "karibu": "near welcome", "mbali": "far",
    "ramani": "map", "mzigo": "parcel luggage load", "mizigo": "parcels luggage loads", "kifurushi": "parcel package",
    "lenzi": "lens lenses", "binafsi": "private own", "kibinafsi": "private", "salio": "balance rest",
    # the business bringing something is a delivery ("mnaleta maji?"); the customer bringing it is not ("nikileta")
    "mnaleta": "deliver bring", "mtaleta": "deliver bring", "analeta": "deliver bring", "wanaleta": "deliver bring",
    "vifurushi": "parcels packages", "bahasha": "envelope",
    "gitaa": "guitar", "magitaa": "guitars", "ngoma": "drum drums",
    # facilities
    "choo": "toilet washroom", "vyoo": "toilets washrooms", "bafu": "bathroom shower",
    "kuoga": "shower bathe", "bwawa": "pool", "kabati": "locker cupboard cabinet wardrobe", "kiti": "chair seat",
    "viti": "chairs seats", "chumba": "room", "vyumba": "rooms", "kitanda": "bed", "vitanda": "beds",
    "lifti": "lift elevator",
    "ngazi": "stairs", "stima": "electricity power", "umeme": "electricity electric",
    "jenereta": "generator", "mtandao": "internet wifi network", "muziki": "music",
    "taulo": "towel", "nguo": "clothes clothing", "viatu": "shoes",
    "kitambaa": "fabric cloth material", "vitambaa": "fabrics cloth material", "sare": "uniform uniforms",
    "pindo": "hem", "mtindo": "style design", "mitindo": "styles designs", "cherehani": "sewing machine",
    "godoro": "mattress", "magodoro": "mattresses", "kitandani": "bed", "kunguni": "bedbugs",
    "panya": "rats mice", "mchwa": "termites", "mende": "cockroaches", "mbu": "mosquitoes",
    "mkwaruzo": "scratch", "mikwaruzo": "scratches", "usafiri": "transport travel fare", "nje": "outside",
    "mrefu": "long", "ipi": "which", "yoyote": "any", "kuua": "kill", "mnaua": "kill", "anavaa": "wear",
    "inakaa": "last stay", "wanapata": "get receive", "nifanyeje": "how", "nawezaje": "how can",
    "liko": "located", "mwingine": "another other", "kutoka": "from",
    "kandambili": "slippers sandals", "mavazi": "clothing wear", "kuvaa": "wear", "nivae": "wear", "nivaeje": "wear",
    "vazi": "outfit clothing",
    "vito": "jewellery", "mkoba": "bag handbag", "usalama": "security safety", "salama": "safe",
    "usafi": "hygiene cleanliness", "safi": "clean", "chafu": "dirty",
    "kiyoyozi": "air conditioning", "joto": "heat hot temperature", "baridi": "cold",
    "mvuke": "steam", "sauna": "sauna",
    # food and drink
    "chakula": "food meal", "vyakula": "food meals", "kinywaji": "drink", "vinywaji": "drinks",
    "maji": "water", "chai": "tea", "kahawa": "coffee", "juisi": "juice", "pombe": "alcohol",
    "kifungua": "breakfast", "kiamsha": "breakfast", "mboga": "vegetables vegetarian", "nyama": "meat",
    "halali": "halal", "sukari": "sugar diabetes",
    # people
    "mteja": "customer guest client", "wateja": "customers guests clients", "mgeni": "guest visitor",
    "wageni": "guests visitors", "mtoto": "child", "watoto": "children", "mwana": "child",
    "binti": "daughter girl", "kijana": "young person teen", "vijana": "teens young people",
    "mama": "mother woman", "baba": "father man", "mzee": "elderly senior", "wazee": "elderly seniors",
    "mwanamke": "woman female", "wanawake": "women female", "mwanaume": "man male", "wanaume": "men male",
    "kike": "female", "kiume": "male", "mume": "husband", "mke": "wife", "mpenzi": "partner",
    "wapenzi": "couple partners", "marafiki": "friends", "rafiki": "friend", "familia": "family",
    "kikundi": "group", "kundi": "group", "wanafunzi": "students", "mwanafunzi": "student",
    "mhudumu": "staff attendant therapist", "wahudumu": "staff attendants therapists",
    "mfanyakazi": "staff employee", "wafanyakazi": "staff employees", "meneja": "manager",
    "daktari": "doctor", "bibi": "bride grandmother", "harusi": "wedding", "arusi": "wedding",
    "hema": "tent", "mahema": "tents", "matanga": "funeral", "mazishi": "funeral burial", "meza": "table tables",
    "sherehe": "party celebration event", "kukodi": "hire rent", "kukodisha": "hire rent", "mnakodisha": "hire rent",
    "mchumba": "fiance", "mimba": "pregnancy pregnant", "mjamzito": "pregnant pregnancy",
    # body, health and care
    "mwili": "body", "ngozi": "skin", "uso": "face", "nywele": "hair", "kucha": "nails", "rasta": "dreadlocks locs",
    "mikono": "hands", "mkono": "hand", "miguu": "feet legs", "mguu": "foot leg", "mgongo": "back",
    "shingo": "neck", "mabega": "shoulders", "misuli": "muscles", "maumivu": "pain",
    "ugonjwa": "illness condition", "mgonjwa": "sick", "dawa": "medicine medication",
    "mzio": "allergy", "aleji": "allergy", "karanga": "nuts peanuts", "mafuta": "oil oils",
    "sabuni": "soap", "manukato": "perfume scent", "vipodozi": "makeup cosmetics",
    "shinikizo": "pressure blood pressure", "kisukari": "diabetes", "upasuaji": "surgery",
    "jeraha": "injury wound", "kuumia": "injury hurt", "afya": "health", "fomu": "form",
    "matibabu": "treatment", "huduma": "service treatment",
    "masaji": "massage", "kusugua": "scrub", "vifaa": "tools equipment", "kifaa": "tool equipment",
    # common adjectives
    "kubwa": "large big", "ndogo": "small", "mdogo": "small young", "mpya": "new", "zamani": "old",
    "nzuri": "good", "bora": "best", "haraka": "quick fast", "polepole": "slow gentle",
    "laini": "soft gentle light", "ngumu": "hard firm", "nguvu": "strong firm pressure",
    "peke": "only alone", "mchanganyiko": "mixed", "pamoja": "together combined",
    # quantities and units (numbers themselves are read by language.swahili_numerals)
    "gesi": "gas", "mtungi": "cylinder", "mitungi": "cylinders",
    "lita": "litre litres", "kilo": "kg kilo", "kipande": "piece", "vipande": "pieces", "paketi": "packet pack",
    "pakiti": "packet pack", "mfuko": "bag", "mifuko": "bags", "sanduku": "box", "chupa": "bottle",
    "ukubwa": "size", "uzito": "weight", "urefu": "length height", "idadi": "number quantity",
    # trades: repairs, building, plumbing, electrics
    "tengeneza": "repair fix", "kutengeneza": "repair fix", "rekebisha": "repair fix",
    "kurekebisha": "repair fix", "ukarabati": "repair renovation", "haribika": "broken damaged",
    "imeharibika": "broken damaged", "vunjika": "broken cracked", "imevunjika": "broken cracked",
    "kuvuja": "leak leaking", "inavuja": "leak leaking", "uvujaji": "leak leakage", "bomba": "pipe tap",
    "mabomba": "pipes plumbing", "tanki": "tank", "tangi": "tank", "dirisha": "window", "madirisha": "windows",
    "paa": "roof", "ukuta": "wall", "kuta": "walls", "sakafu": "floor", "nyumba": "house home",
    "nyumbani": "home at home house", "ofisini": "office", "dukani": "shop store",
    "soketi": "socket", "swichi": "switch", "waya": "wire wiring", "nyaya": "wires wiring",
    "taa": "light lights lamp", "betri": "battery", "mabetri": "batteries", "sola": "solar",
    "paneli": "panel panels", "jiko": "cooker stove kitchen", "pasi": "iron ironing", "friji": "fridge",
    "injini": "engine", "tairi": "tyre tyres", "magurudumu": "wheels",
    "bati": "iron sheet roofing", "mabati": "iron sheets roofing",
    # shops, orders and delivery
    "duka": "shop store", "bidhaa": "products goods items", "stoo": "stock store",
    "kuletewa": "delivery delivered", "kusafirisha": "delivery shipping", "usafirishaji": "delivery shipping",
    "agizo": "order", "maagizo": "orders instructions", "jumla": "wholesale total", "rejareja": "retail",
    # clothes and cleaning
    "suti": "suit suits", "koti": "coat jacket", "makoti": "coats jackets", "gauni": "dress gown",
    "magauni": "dresses gowns", "shati": "shirt", "mashati": "shirts", "suruali": "trousers",
    "pazia": "curtain curtains", "mapazia": "curtains", "zulia": "carpet rug", "mazulia": "carpets rugs",
    "picha": "photo photos picture", "pasipoti": "passport", "karatasi": "paper", "nakala": "copy copies",
    "blanketi": "blanket blankets", "mashuka": "sheets bedsheets",
    "kufua": "wash laundry clean", "kufuliwa": "washed laundry", "doa": "stain", "madoa": "stains",
    "zipu": "zip zipper", "kushona": "sew stitch alterations",
    # animals and their care
    "mnyama": "animal pet", "wanyama": "animals pets", "mbwa": "dog dogs", "mbuzi": "goat", "paka": "cat cats",
    "ngombe": "cow cattle", "kuku": "chicken poultry", "sungura": "rabbit", "ndege": "bird birds",
    "chanjo": "vaccine vaccination", "kuchanja": "vaccinate vaccination", "minyoo": "worms deworming",
    "kupe": "ticks", "viroboto": "fleas", "mifugo": "livestock",
    # learning
    "kozi": "course", "somo": "lesson", "masomo": "lessons", "mwalimu": "instructor teacher",
    "muhula": "term", "mihula": "terms",
    "walimu": "instructors teachers", "mtihani": "test exam", "mitihani": "tests exams", "leseni": "licence",
    "darasa": "class classroom", "cheti": "certificate", "shule": "school",
    # work, people and trouble
    "kazi": "work job", "fundi": "fundi technician repairman", "mafundi": "technicians repairmen",
    "mpangaji": "tenant", "wapangaji": "tenants", "mwenye": "owner", "jirani": "neighbour",
    "majirani": "neighbours", "dharura": "emergency urgent", "tayari": "ready", "muda": "time duration",
    "uchafu": "dirt mess rubbish", "unyevu": "damp moisture", "njaa": "hunger fasting fast",
    "jikoni": "kitchen", "chini": "low below", "jua": "sun solar", "chaji": "charge charging",
    "pampu": "pump", "mita": "meter", "mashine": "machine", "mingapi": "how many", "mangapi": "how many",
    # asking, time and place
    "aje": "how", "wazi": "open", "wakati": "time when", "tarehe": "date", "ofisi": "office", "saluni": "salon",
    "ndani": "inside indoor", "nyuma": "back reverse", "ziada": "extra additional", "kidogo": "little small",
    "inafaa": "suitable right", "yanafaa": "suitable right", "imejaa": "full flooded",
    # people
    "mzazi": "parent", "wazazi": "parents", "babu": "grandfather elderly", "wadogo": "small young",
    "dereva": "driver", "madereva": "drivers", "polisi": "police", "mlemavu": "disabled disability",
    "walemavu": "disabled disability", "kampuni": "company",
    # things, weather and building
    "mvua": "rain", "matope": "mud", "rangi": "colour paint", "kamera": "camera", "fupi": "short",
    "nzito": "heavy thick", "mazito": "heavy thick", "mbao": "timber wood", "vipimo": "measurements size tests",
    "kipimo": "measurement size test", "saruji": "cement", "msingi": "foundation", "cheche": "sparks",
    "kibanda": "shed shelter", "kufuli": "padlock lock", "makabati": "lockers cupboards cabinets wardrobes",
    "pointi": "points",
    "mnakata": "cut", "kukata": "cut", "mnafua": "wash laundry clean",
    # sport and health
    "mazoezi": "exercise training workout practice", "michezo": "sports", "ndondi": "boxing",
    "vipindi": "sessions classes", "kipindi": "session class", "presha": "blood pressure",
    "ramadhani": "ramadan",
}

ROOTS: dict[str, str] = {
    # booking and changes (verb stems)
    "weka nafasi": "book reserve", "bukisha": "book booking", "buki": "book booking",
    "ghairi": "cancel", "ahirish": "postpone reschedule", "badilish": "change replace reschedule",
    "thibitish": "confirm", "tangaz": "announce advertise post", "subiri": "wait", "ngoje": "wait",
    "chelew": "late delay", "wahi": "early on time", "fika": "arrive", "fike": "arrive",
    "kuja": "come",
    # opening
    "fungu": "open", "fungw": "closed", "funga": "close", "funge": "close",
    # money
    "lipa": "pay payment", "lipi": "pay charged", "lipw": "paid pay", "rudish": "refund return",
    "rejesh": "refund return",
    "potea": "lost missing", "potez": "lose lost", "nunua": "buy", "tuma": "send",
    "pungu": "discount reduce", "tozw": "charged fee",
    # getting there and facilities
    "egesh": "park parking", "paki": "park parking", "shuka": "drop off",
    "ogelea": "swim swimming", "ogesh": "shower wash", "pasha": "warm heat",
    # care and treatment
    "kanda": "massage", "sugu": "scrub", "paka": "apply",
    "podo": "makeup", "safish": "clean", "tibiw": "treated", "osha": "wash",
    "suka": "braid", "nyoa": "haircut shave", "pumzik": "relax rest",
    # rules
    "ruhusi": "allowed permitted", "ruhusiw": "allowed permitted", "kataz": "forbidden not allowed",
    "vuta": "pull tow smoke", "leta": "bring", "lete": "bring", "pelek": "take deliver send",
    "omba": "request ask apply", "saidi": "help assist", "ogop": "afraid nervous scared",
    "tambu": "recognise identify", "chagu": "choose", "fanyi": "done for", "hitaj": "need",
    # faults and repairs
    "haribik": "broken damaged", "pasuk": "burst cracked", "mwagik": "spill leak", "zibw": "blocked",
    "ziba": "blocked clogged", "nuka": "smell smells", "gongw": "hit accident", "pinda": "bent",
    "shughulik": "handle deal with", "maliz": "finish", "angali": "check look", "kagu": "inspect check",
    "sukum": "push pump", "washa": "switch on power", "rudi": "return back again", "shona": "sew stitch",
    "chuku": "pick up collect",
    # doing, learning, paying
    "kubali": "accept", "lipe": "pay", "gharimu": "cost price", "nyesha": "rain raining", "endesha": "drive driving",
    "fundish": "teach lessons training", "tengenez": "repair fix", "weka": "keep put store", "kodish": "hire rent",
    "ajiri": "hire employ jobs", "pima": "test measure check", "ingia": "enter come in", "kuza": "grow growth",
    "andikish": "register enrol", "feli": "fail failed", "jiung": "join membership", "simamish": "pause freeze",
    # before "isha": "kuhamisha" (move house) and "inahusisha" (includes) are not "expire"
    "hamish": "move moving relocate", "safirish": "transport send deliver", "husish": "include includes involve",
    "changany": "mix mixing", "mwaga": "pour", "ungua": "burn burning", "isha": "expire end", "jeng": "build",
    "dumu": "last durable", "shiriki": "share shared join",
    "shone": "sew stitch tailor", "chanik": "torn tear", "fupish": "shorten", "ondoa": "remove",
    "sahau": "forget forgot", "kauk": "dry", "tafut": "look for search", "ridhik": "satisfied happy",
    "kojoa": "urinate wet", "karibi": "near approach", "puliz": "spray", "piga dawa": "spray fumigate",
    "kidogo kidogo": "instalments bit by bit", "bibi harusi": "bride bridal", "akina mama": "women ladies",
    "pesa ngapi": "price cost how much", "pesa gani": "price cost how much",
}

# Swahili function words that carry no search meaning (question particles, pronouns, connectives).
STOPWORDS: frozenset[str] = frozenset(
    """
    na ya wa za la cha vya kwa katika ni si kama au ama lakini pia tu sana hii hiyo ile huyu yule hawa kwenye lenu ina
    wale hapa pale huko kule je nini gani vipi kwanini mimi wewe yeye sisi nyinyi wao yangu yako yake
    yetu yenu yao wangu wako wake wetu wenu wao langu lako lake kwangu kwako kwake kwetu kwenu kwao
    ndio ndiyo hapana sawa hata bado tena kila kitu vitu mtu watu hivyo hivi basi halafu kisha kwamba
    ili kabla baada mpaka hadi tangu bila zaidi kuliko hasa kweli fulani ngapi nani niko uko yuko
    tuko mko wako naweza unaweza anaweza tunaweza mnaweza wanaweza inaweza inawezekana nataka tunataka huwa
    msee bro sasa poa ata zangu zako zake zetu zenu zao huu hizi hawa tafadhali
    """.split()
)

# Words customers drop into Swahili or Sheng sentences that are already English (loanwords stay as
# they are; listing the common ones lets mixed messages keep them for keyword search).
LOANWORDS: frozenset[str] = frozenset(
    """
    massage facial pedicure manicure gel acrylic spa sauna steam parking deposit booking book walk
    walk-in birthday party wedding bridal card cash mpesa m-pesa till paybill voucher discount wifi
    menu delivery takeaway reservation room hotel breakfast lunch dinner check-in checkout wax waxing
    nails hair salon braids scrub oil oils appointment receipt refund credit bank visa mastercard
    taxi uber bolt lift shower locker towel robe therapist doctor allergy pregnancy prenatal
    sofa sofas engine shampoo size sizes lounge boda kitenge mashujaa jamhuri madaraka gate pickup
    """.split()
)
